/// The frame of every page: the head, the bar with the navigation and the sign-out form (for a
/// signed-in page: its ``ConsoleChrome``), and the page's `content` block.
enum ConsoleLayout {
    static let name = "layout"

    static let mustache = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · RevSync console</title>
        <link rel="icon" href="data:,">
        <link rel="stylesheet" href="/admin/static/console.css">
        <script src="/admin/static/console.js" defer></script>
        </head>
        <body{{#refresh}} data-refresh="{{refresh}}"{{/refresh}}>
        <header class="bar">
          <a class="brand" href="/admin">RevSync</a>
          {{#chrome}}
          <nav>
            <a href="/admin"{{#nav.overview}} aria-current="page"{{/nav.overview}}>Overview</a>
            <a href="/admin/devices"{{#nav.devices}} aria-current="page"{{/nav.devices}}>Devices</a>
            <a href="/admin/refusals"{{#nav.refusals}} aria-current="page"{{/nav.refusals}}>Refusals</a>
            <a href="/admin/history"{{#nav.history}} aria-current="page"{{/nav.history}}>History</a>
            <a href="/admin/erasures"{{#nav.erasures}} aria-current="page"{{/nav.erasures}}>Erasures</a>
          </nav>
          <form class="signout" method="post" action="/admin/logout">
            <input type="hidden" name="csrf" value="{{csrf}}">
            <span class="who">{{operatorName}}</span>
            <button type="submit" id="sign-out">Sign out</button>
          </form>
          {{/chrome}}
        </header>
        <main id="content">
        {{$content}}{{/content}}
        </main>
        </body>
        </html>
        """
}
