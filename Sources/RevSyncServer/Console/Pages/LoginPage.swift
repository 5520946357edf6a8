/// The sign-in form, with a CSRF token of its own (also set as a cookie, which the post must
/// repeat), and what to sign in with.
struct LoginPage: ConsolePage {
    static let template = "login"
    let title = "Sign in"
    let chrome: ConsoleChrome? = nil
    let refresh: Int? = nil
    var loginCsrf: String
    /// Why the last attempt failed.
    var error: String?
    /// Why the operator is here again (a session that ended).
    var notice: String?
    /// Where the first admin token is, and the command that makes another, for this server.
    var tokenFile: String?
    var createCommand: String

    static let mustache = """
        {{<layout}}{{$content}}
        <section class="login">
          <h1>Sign in</h1>
          {{#notice}}<p class="notice" id="notice" role="status">{{notice}}</p>{{/notice}}
          <p>With an admin token.{{#tokenFile}} The first one is in <code>{{tokenFile}}</code>, written when the server first started.{{/tokenFile}} Make another with:</p>
          <p><code class="command" id="create-command">{{createCommand}}</code></p>
          {{#error}}<p class="error" id="error" role="alert">{{error}}</p>{{/error}}
          <form method="post" action="/admin/login">
            <input type="hidden" name="csrf" value="{{loginCsrf}}">
            <label for="token">Admin token</label>
            <input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required autofocus>
            <button type="submit" id="sign-in">Sign in</button>
          </form>
        </section>
        {{/content}}{{/layout}}
        """
}
