/// The console's stylesheet and script, served from `/admin/static/` (the Content-Security-Policy
/// allows scripts and styles from the server only, nothing inline).
///
/// Every page shows its actions and reasons without sideways scrolling from a phone's width to
/// a laptop's: cells wrap, and below 1,000 px a table's rows become cards, each cell a line with
/// its column's name (`data-label`).
enum ConsoleAssets {
    static let stylesheet = """
        :root { --ink: #1d2430; --muted: #5f6b7a; --line: #d9dee5; --paper: #ffffff; --wash: #f4f6f9;
          --accent: #1f6feb; --good: #1a7f37; --warn: #9a6700; --bad: #cf222e; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: var(--ink); background: var(--wash); }
        .bar { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 1.25rem; padding: 0.6rem 1.25rem; background: var(--ink); color: #fff; }
        .bar a { color: #fff; text-decoration: none; }
        .brand { font-weight: 700; font-size: 1.1rem; }
        nav { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; }
        .bar nav a { padding: 0.2rem 0; border-bottom: 2px solid transparent; }
        .bar nav a[aria-current="page"] { border-bottom-color: #fff; }
        .signout { margin-left: auto; display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; }
        .who { color: #c9d1d9; overflow-wrap: anywhere; }
        main { padding: 1rem 1.25rem 3rem; max-width: 1280px; margin: 0 auto; }
        h1 { font-size: 1.5rem; margin: 0.5rem 0 1rem; overflow-wrap: anywhere; } h2 { font-size: 1.15rem; margin: 1.75rem 0 0.75rem; }
        .muted, .hint { color: var(--muted); } .hint { font-size: 0.85rem; margin: 0.2rem 0; }
        .hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
        .figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 0.75rem; }
        .figure, .bucket { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 0.75rem 1rem; min-width: 0; }
        .figure .label, .bucket .label { display: block; color: var(--muted); font-size: 0.85rem; }
        .figure .value { font-size: 1.2rem; font-weight: 600; overflow-wrap: break-word; }
        .figure.wide { grid-column: span 2; } .figure .value.detail { font-size: 1rem; font-weight: 400; }
        @media (max-width: 480px) { .figure.wide { grid-column: auto; } }
        .currency { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 0.75rem; }
        a.bucket { color: var(--ink); text-decoration: none; display: block; } a.bucket:hover .label { text-decoration: underline; }
        .bucket .count { font-size: 1.8rem; font-weight: 700; } .bucket .label { display: inline; } .bucket .hint { display: block; }
        .cards-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(240px, 1fr)); gap: 0.75rem; margin-top: 1.25rem; }
        .card { background: var(--paper); border: 1px solid var(--line); border-top: 4px solid var(--good); border-radius: 8px; padding: 0.75rem 1rem; min-width: 0; }
        .card.alert { border-top-color: var(--warn); }
        .alert-line { background: var(--paper); border: 1px solid var(--line); border-left: 4px solid var(--warn); border-radius: 8px; padding: 0.6rem 1rem; overflow-wrap: anywhere; }
        .card h2 { margin: 0 0 0.5rem; font-size: 1.05rem; } .card .count { font-size: 1.5rem; margin-right: 0.2rem; }
        .card p { margin: 0.5rem 0 0; }
        ul.list, ul.found { margin: 0; padding-left: 1.1rem; } ul.list li, ul.found li { overflow-wrap: anywhere; margin: 0.15rem 0; }
        .form-title { font-weight: 600; align-self: center; }
        #create-token, #filter, #find { margin-bottom: 0.75rem; }
        form.handle { display: inline; margin: 0; } td.action .note.handled { display: block; max-width: 9rem; margin-bottom: 0.3rem; }
        tr.handled td { color: var(--muted); } tr.handled td.reason { color: var(--muted); }
        section.record { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 0.75rem 1rem; }
        section.record h2 { margin: 0 0 0.5rem; font-size: 1.05rem; }
        .bucket.current { border-top: 4px solid var(--good); } .bucket.behind { border-top: 4px solid var(--warn); }
        .bucket.farBehind, .bucket.silent { border-top: 4px solid var(--bad); } .bucket.neverSynced { border-top: 4px solid var(--muted); }
        .chart { margin: 0; background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 0.75rem; }
        .chart svg { width: 100%; height: auto; display: block; }
        .key::before { content: ""; display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.25em; vertical-align: -0.05em; border-radius: 2px; }
        .key.syncs::before { background: #8fb8f0; } .key.commits::before { background: var(--good); } .key.refusals::before { background: var(--bad); }
        table { border-collapse: collapse; width: 100%; background: var(--paper); border: 1px solid var(--line); }
        table.compact { width: auto; min-width: 18rem; }
        th, td { text-align: left; padding: 0.45rem 0.5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        td { overflow-wrap: break-word; }
        th { background: var(--wash); font-weight: 600; white-space: nowrap; } th a { color: var(--ink); }
        td.action { white-space: nowrap; } td.action .note { white-space: normal; display: inline-block; max-width: 16rem; }
        .number { text-align: right; font-variant-numeric: tabular-nums; }
        tr.revoked td { color: var(--muted); text-decoration: line-through; } tr.revoked td.action { text-decoration: none; }
        tr.behind td.behind { color: var(--warn); font-weight: 600; }
        tr.farBehind td.behind, tr.silent td.behind { color: var(--bad); font-weight: 600; }
        tr.neverSynced td.behind { color: var(--muted); }
        td.live { color: var(--good); } .reason { color: var(--bad); }
        ul.entries, ul.details, ul.diff, ul.whole { margin: 0; padding-left: 1.1rem; }
        ul.diff li, ul.whole li { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.85em; overflow-wrap: anywhere; }
        .why { min-width: 0; } .sides { margin-top: 0.6rem; } .sides-title { margin: 0 0 0.25rem; font-weight: 600; overflow-wrap: anywhere; }
        .sides-grid { display: grid; grid-template-columns: minmax(6rem, max-content) repeat(3, minmax(0, 1fr)); border: 1px solid var(--line); border-radius: 6px; }
        .sides-grid span { padding: 0.25rem 0.45rem; border-top: 1px solid var(--line); overflow-wrap: anywhere; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.85em; }
        .sides-grid span.head { border-top: none; background: var(--wash); font-family: inherit; font-weight: 600; color: var(--ink); }
        .sides-grid .changed { color: var(--warn); font-weight: 600; } .sides-grid em { display: block; font-style: normal; font-family: system-ui, sans-serif; font-size: 0.8em; }
        figure.thumbnail { display: inline-block; margin: 0.4rem 0.6rem 0 0; max-width: 10rem; }
        figure.thumbnail img { display: block; max-width: 100%; max-height: 8rem; border: 1px solid var(--line); border-radius: 6px; }
        figure.thumbnail figcaption { font-size: 0.8rem; color: var(--muted); overflow-wrap: anywhere; }
        details summary { cursor: pointer; color: var(--accent); margin-top: 0.3rem; }
        code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.85em; overflow-wrap: anywhere; word-break: break-all; }
        code.command { display: inline-block; background: var(--wash); padding: 0.3rem 0.5rem; border-radius: 6px; }
        .chip { display: inline-block; padding: 0.15rem 0.6rem; margin: 0 0.3rem 0.3rem 0; background: var(--paper); border: 1px solid var(--line); border-radius: 999px; }
        nav.sort { display: none; margin: 0 0 0.75rem; } nav.sort a { color: var(--accent); } nav.sort a[aria-current] { font-weight: 700; }
        .pages { display: flex; flex-wrap: wrap; gap: 1rem; }
        form.inline { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: end; background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 0.75rem 1rem; }
        form.inline label { display: flex; flex-direction: column; font-size: 0.85rem; color: var(--muted); max-width: 100%; }
        form.actions { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; margin-top: 1.25rem; }
        #erase-form { display: flex; flex-direction: column; gap: 1rem; max-width: 48rem; }
        #erase-form fieldset { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 0.75rem 1rem; margin: 0; }
        #erase-form > label { display: flex; flex-direction: column; gap: 0.3rem; font-size: 0.85rem; color: var(--muted); }
        #erase-form p.actions { display: flex; flex-wrap: wrap; gap: 1rem; margin: 0; }
        .checks { display: flex; flex-wrap: wrap; gap: 0.5rem 1.25rem; margin-top: 0.75rem; }
        label.check { display: inline-flex; align-items: center; gap: 0.4rem; }
        label.check input { min-height: 0; margin: 0; }
        a.flag.erasure { display: inline-block; font-size: 0.8rem; font-weight: 600; color: var(--bad); }
        .flag.mismatch { display: inline-block; font-size: 0.8rem; font-weight: 600; color: var(--bad); }
        .flag.repair { display: inline-block; font-size: 0.8rem; font-weight: 600; color: var(--warn); }
        input, select, button, .button { font: inherit; padding: 0.45rem 0.7rem; border-radius: 6px; border: 1px solid var(--line); min-height: 2.4rem; max-width: 100%; }
        button, .button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; text-decoration: none; display: inline-block; }
        .button.secondary { background: var(--paper); color: var(--ink); border-color: var(--line); }
        .bar button { background: transparent; border-color: #8b949e; min-height: 2rem; padding: 0.2rem 0.6rem; }
        .danger, button.danger { background: var(--bad); border-color: var(--bad); color: #fff; }
        .button.small { padding: 0.25rem 0.6rem; min-height: 0; font-size: 0.85rem; }
        .error { color: var(--bad); font-weight: 600; } .success { color: var(--good); font-weight: 600; }
        .notice { background: #fff8c5; border: 1px solid #d4a72c; padding: 0.5rem 0.75rem; border-radius: 6px; }
        .login { max-width: 30rem; margin: 3rem auto; background: var(--paper); border: 1px solid var(--line); border-radius: 10px; padding: 1.5rem; }
        .login form { display: flex; flex-direction: column; gap: 0.6rem; }
        .token code { font-size: 1rem; background: var(--paper); border: 1px solid var(--line); padding: 0.4rem 0.6rem; border-radius: 6px; }
        @media (max-width: 1000px) {
          nav.sort { display: block; }
          table.cards, table.cards tbody, table.cards tr, table.cards td { display: block; width: 100%; }
          table.cards { border: none; background: none; }
          table.cards thead { display: none; }
          table.cards tr { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; margin-bottom: 0.75rem; padding: 0.5rem 0.75rem;
            display: grid; grid-template-columns: repeat(auto-fill, minmax(16rem, 1fr)); column-gap: 1.5rem; }
          /* A cell is its label, then its content in the column beside it, however many elements
             that content has (a grid would put the second of them under the label). */
          table.cards td { border: none; padding: 0.2rem 0 0.2rem 7.75rem; position: relative; text-align: left; min-height: 1.7rem; }
          table.cards td::before { content: attr(data-label); position: absolute; left: 0; top: 0.25rem; width: 7rem; color: var(--muted); font-size: 0.85rem; overflow-wrap: anywhere; }
          table.cards td:empty { display: none; }
          table.cards td.name, table.cards td.wrap, table.cards td[colspan] { grid-column: 1 / -1; }
          table.cards td.name { font-weight: 600; }
          table.cards td[colspan] { padding-left: 0; } table.cards td[colspan]::before { content: none; }
          table.cards td.action { grid-column: 1 / -1; display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; white-space: normal; padding: 0.4rem 0 0.2rem; }
          table.cards td.action::before { content: none; }
        }
        @media (max-width: 700px) { main { padding: 0.75rem; } .signout { margin-left: 0; } table.cards td { padding-left: 6.75rem; } table.cards td::before { width: 6rem; } }
        """

    static let script = """
        "use strict";
        // Copy buttons: <button data-copy="element-id">.
        document.addEventListener("click", (event) => {
          const button = event.target.closest("[data-copy]");
          if (!button) return;
          const text = document.getElementById(button.dataset.copy).textContent;
          const done = () => { button.textContent = "Copied"; };
          if (navigator.clipboard && window.isSecureContext) {
            navigator.clipboard.writeText(text).then(done);
          } else {
            const range = document.createRange();
            range.selectNodeContents(document.getElementById(button.dataset.copy));
            const selection = window.getSelection();
            selection.removeAllRanges();
            selection.addRange(range);
            if (document.execCommand("copy")) done();
          }
        });
        // Live pages (<body data-refresh="seconds">): the page's content is fetched again and
        // replaced, unless a field has the focus or was changed. The next fetch is planned only
        // when the last one has finished, later when the server was slow to answer. The fetches say they are
        // not a person's (X-RevSync-Refresh), so they do not keep an idle session alive; a
        // session that ended sends the page to the sign-in page, which says why.
        const seconds = Number(document.body.dataset.refresh || 0);
        if (seconds > 0) {
          const base = seconds * 1000;
          let delay = base;
          const refresh = async () => {
            const active = document.activeElement;
            const typing = active && ["INPUT", "SELECT", "TEXTAREA"].includes(active.tagName);
            // A field someone changed and left keeps its value: the page waits until it is sent.
            const changed = [...document.querySelectorAll("#content input, #content select, #content textarea")].some((field) =>
              field.tagName === "SELECT" ? field.selectedIndex !== Math.max(0, [...field.options].findIndex((option) => option.defaultSelected))
                : ["checkbox", "radio"].includes(field.type) ? field.checked !== field.defaultChecked : field.value !== field.defaultValue);
            if (!typing && !changed && !document.hidden) {
              const started = performance.now();
              try {
                const response = await fetch(location.href, { credentials: "same-origin", headers: { "X-RevSync-Refresh": "1" } });
                // A session that ended: the sign-in page the server sent us to, which says why.
                if (response.redirected) { location.assign(response.url); return; }
                if (response.status === 401) { location.reload(); return; }
                if (response.ok) {
                  const page = new DOMParser().parseFromString(await response.text(), "text/html");
                  const fresh = page.getElementById("content");
                  const open = [...document.querySelectorAll("#content details[open]")].map((element) => element.id).filter(Boolean);
                  if (fresh) document.getElementById("content").replaceChildren(...fresh.childNodes);
                  for (const id of open) { const element = document.getElementById(id); if (element) element.open = true; }
                }
                const took = performance.now() - started;
                delay = took > base / 4 ? Math.min(delay * 2, 60000) : base;
              } catch (error) {
                // The server is away for a moment: try again, less often.
                delay = Math.min(delay * 2, 60000);
              }
            }
            setTimeout(refresh, delay);
          };
          setTimeout(refresh, delay);
        }
        """
}
