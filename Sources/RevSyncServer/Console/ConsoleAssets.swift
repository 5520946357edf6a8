/// The console's stylesheet and script, served from `/admin/static/` (the Content-Security-Policy
/// allows scripts and styles from the server only, nothing inline).
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
        nav a { padding: 0.2rem 0; border-bottom: 2px solid transparent; }
        nav a[aria-current="page"] { border-bottom-color: #fff; }
        .signout { margin-left: auto; display: flex; gap: 0.5rem; align-items: center; }
        .who { color: #c9d1d9; }
        main { padding: 1rem 1.25rem 3rem; max-width: 1200px; margin: 0 auto; }
        h1 { font-size: 1.5rem; margin: 0.5rem 0 1rem; } h2 { font-size: 1.15rem; margin: 1.75rem 0 0.75rem; }
        .muted, .hint { color: var(--muted); } .hint { font-size: 0.85rem; margin: 0.2rem 0; }
        .figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 0.75rem; }
        .figure, .bucket { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 0.75rem 1rem; }
        .figure .label, .bucket .label { display: block; color: var(--muted); font-size: 0.85rem; }
        .figure .value { font-size: 1.2rem; font-weight: 600; }
        .currency { display: grid; grid-template-columns: repeat(auto-fit, minmax(210px, 1fr)); gap: 0.75rem; }
        .bucket .count { font-size: 1.8rem; font-weight: 700; } .bucket .label { display: inline; }
        .bucket ul { margin: 0.4rem 0 0; padding-left: 1.1rem; max-height: 10rem; overflow: auto; }
        .bucket.current { border-top: 4px solid var(--good); } .bucket.behind { border-top: 4px solid var(--warn); }
        .bucket.farBehind, .bucket.silent { border-top: 4px solid var(--bad); }
        .chart { margin: 0; background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 0.75rem; }
        .chart svg { width: 100%; height: auto; display: block; }
        .key::before { content: ""; display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.25em; vertical-align: -0.05em; border-radius: 2px; }
        .key.syncs::before { background: #8fb8f0; } .key.commits::before { background: var(--good); } .key.refusals::before { background: var(--bad); }
        .scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; }
        table { border-collapse: collapse; width: 100%; background: var(--paper); border: 1px solid var(--line); }
        table.compact { width: auto; min-width: 18rem; }
        th, td { text-align: left; padding: 0.45rem 0.6rem; border-bottom: 1px solid var(--line); vertical-align: top; white-space: nowrap; }
        td.values, td ul.entries { white-space: normal; }
        th { background: var(--wash); font-weight: 600; } th a { color: var(--ink); }
        .number { text-align: right; font-variant-numeric: tabular-nums; }
        tr.revoked td { color: var(--muted); text-decoration: line-through; } tr.revoked td:last-child { text-decoration: none; }
        tr.behind td.behind, tr.farBehind td.behind, tr.silent td.behind { color: var(--bad); font-weight: 600; }
        td.live { color: var(--good); } .reason { color: var(--bad); }
        ul.entries, ul.details { margin: 0; padding-left: 1.1rem; }
        code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.85em; word-break: break-all; }
        .chip { display: inline-block; padding: 0.15rem 0.6rem; margin: 0 0.3rem 0.3rem 0; background: var(--paper); border: 1px solid var(--line); border-radius: 999px; }
        form.inline { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: end; background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 0.75rem 1rem; }
        form.inline label { display: flex; flex-direction: column; font-size: 0.85rem; color: var(--muted); }
        input, select, button, .button { font: inherit; padding: 0.45rem 0.7rem; border-radius: 6px; border: 1px solid var(--line); min-height: 2.4rem; }
        button, .button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; text-decoration: none; display: inline-block; }
        .bar button { background: transparent; border-color: #8b949e; min-height: 2rem; padding: 0.2rem 0.6rem; }
        .danger, button.danger { background: var(--bad); border-color: var(--bad); color: #fff; }
        a.button.danger { padding: 0.25rem 0.6rem; min-height: 0; font-size: 0.85rem; }
        .error { color: var(--bad); font-weight: 600; } .success { color: var(--good); font-weight: 600; }
        .login { max-width: 26rem; margin: 3rem auto; background: var(--paper); border: 1px solid var(--line); border-radius: 10px; padding: 1.5rem; }
        .login form { display: flex; flex-direction: column; gap: 0.6rem; }
        .token code { font-size: 1rem; background: var(--paper); border: 1px solid var(--line); padding: 0.4rem 0.6rem; border-radius: 6px; }
        @media (max-width: 700px) { main { padding: 0.75rem; } .signout { margin-left: 0; } }
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
        // replaced, unless a field has the focus; a session that ended goes to the sign-in page.
        const seconds = Number(document.body.dataset.refresh || 0);
        if (seconds > 0) {
          setInterval(async () => {
            const active = document.activeElement;
            if (active && ["INPUT", "SELECT", "TEXTAREA"].includes(active.tagName)) return;
            try {
              const response = await fetch(location.href, { credentials: "same-origin", headers: { "X-RevSync-Refresh": "1" } });
              if (response.redirected || response.status === 401) { location.reload(); return; }
              if (!response.ok) return;
              const page = new DOMParser().parseFromString(await response.text(), "text/html");
              const fresh = page.getElementById("content");
              if (fresh) document.getElementById("content").replaceChildren(...fresh.childNodes);
            } catch (error) {
              // The server is away for a moment: the next round tries again.
            }
          }, seconds * 1000);
        }
        """
}
