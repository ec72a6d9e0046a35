"""The dashboard's stylesheet and script, served from memory (no CDN: no internet here).

Kept as strings rather than package data so the wheel needs no extra file patterns and
the Content-Security-Policy can stay ``'self'`` (no inline script or style).
"""

from __future__ import annotations

CSS = """
:root { --fg:#1f2430; --muted:#6b7280; --line:#e5e7eb; --bg:#f7f8fa; --accent:#2563eb; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
  color:var(--fg); background:var(--bg); }
header { display:flex; align-items:center; gap:24px; padding:10px 24px; background:#111827; color:#fff; }
header .brand { font-weight:700; letter-spacing:.02em; }
header nav a { color:#cbd5e1; text-decoration:none; margin-right:16px; padding:4px 0; }
header nav a.on, header nav a:hover { color:#fff; border-bottom:2px solid #60a5fa; }
header .store { margin-left:auto; color:#9ca3af; font:12px ui-monospace,monospace; }
header .user { color:#e5e7eb; font-size:12px; border:1px solid #374151; border-radius:4px; padding:2px 8px; }
main { padding:20px 24px; max-width:1280px; }
h1 { font-size:20px; margin:0 0 14px; } h2 { font-size:16px; margin:22px 0 8px; }
a { color:var(--accent); }
table { width:100%; border-collapse:collapse; background:#fff; border:1px solid var(--line);
  border-radius:6px; overflow:hidden; }
th, td { text-align:left; padding:7px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:#f3f4f6; font-weight:600; font-size:12px; color:#374151; text-transform:uppercase;
  letter-spacing:.03em; }
tr:last-child td { border-bottom:none; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
td.empty { color:var(--muted); text-align:center; padding:18px; }
code, .mono { font:12px ui-monospace,SFMono-Regular,Menlo,monospace; }
.args { max-width:180px; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; display:block;
  color:#374151; }
pre { background:#0f172a; color:#e2e8f0; padding:12px; border-radius:6px; overflow:auto;
  font:12px/1.5 ui-monospace,monospace; max-height:420px; margin:6px 0; }
.badge { display:inline-block; padding:1px 8px; border-radius:999px; font-size:12px; font-weight:600; }
.s-queued { background:#dbeafe; color:#1e40af; } .s-scheduled { background:#ede9fe; color:#5b21b6; }
.s-running { background:#fef3c7; color:#92400e; } .s-waiting { background:#e0f2fe; color:#075985; } .s-succeeded { background:#dcfce7; color:#166534; }
.s-dead { background:#fee2e2; color:#991b1b; } .s-cancelled { background:#e5e7eb; color:#374151; }
.s-expired { background:#fce7f3; color:#9d174d; }
.s-paused { background:#fde68a; color:#78350f; } .s-failed { background:#ffedd5; color:#9a3412; }
.s-lost, .s-released, .s-dropped { background:#f3f4f6; color:#4b5563; }
form.inline { display:inline; margin:0 4px 0 0; }
.btn { border:1px solid #d1d5db; background:#fff; border-radius:5px; padding:4px 10px; cursor:pointer;
  font-size:13px; }
a.btn { text-decoration:none; display:inline-block; }
.btn:hover { background:#f3f4f6; } .btn.danger { color:#b91c1c; border-color:#fca5a5; }
.btn.primary { background:var(--accent); border-color:var(--accent); color:#fff; }
.filters { display:flex; gap:8px; flex-wrap:wrap; align-items:end; margin-bottom:12px; background:#fff;
  padding:10px 12px; border:1px solid var(--line); border-radius:6px; }
.filters label { display:flex; flex-direction:column; font-size:11px; color:var(--muted); gap:2px; }
.filters input, .filters select { padding:4px 6px; border:1px solid #d1d5db; border-radius:4px; font-size:13px; }
.bar { display:flex; gap:10px; align-items:center; margin:10px 0; color:var(--muted); flex-wrap:wrap; }
.flash { background:#ecfdf5; border:1px solid #a7f3d0; color:#065f46; padding:8px 12px;
  border-radius:6px; margin-bottom:12px; }
dl.fields { display:grid; grid-template-columns:160px 1fr; gap:4px 12px; background:#fff;
  border:1px solid var(--line); border-radius:6px; padding:12px; margin:0; }
dl.fields dt { color:var(--muted); } dl.fields dd { margin:0; }
.cards { display:flex; gap:12px; flex-wrap:wrap; margin-bottom:8px; }
.card { background:#fff; border:1px solid var(--line); border-radius:6px; padding:10px 14px; min-width:150px; }
.card .n { font-size:22px; font-weight:700; } .card .l { color:var(--muted); font-size:12px; }
svg.spark polyline { fill:none; stroke:var(--accent); stroke-width:1.6; }
.chartbox { display:inline-block; background:#fff; border:1px solid var(--line); border-radius:6px;
  padding:8px 10px; max-width:100%; overflow-x:auto; }
svg.chart { display:block; }
svg.chart rect.succeeded { fill:#22c55e; } svg.chart rect.dead { fill:#ef4444; }
svg.chart rect.cancelled { fill:#9ca3af; } svg.chart rect.expired { fill:#ec4899; }
svg.chart rect.hit { fill:transparent; } svg.chart rect.hit:hover { fill:rgba(37,99,235,.08); }
svg.chart line.grid { stroke:#eef0f3; } svg.chart line.axis { stroke:#9ca3af; }
svg.chart text.tick { fill:var(--muted); font-size:11px; }
svg.chart text.label { fill:#374151; font-size:12px; }
svg.chart text.empty { fill:var(--muted); font-size:13px; }
.legend { display:flex; gap:16px; font-size:12px; color:#374151; padding:4px 0 0 48px; }
.swatch { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:5px; }
.swatch.succeeded { background:#22c55e; } .swatch.dead { background:#ef4444; }
.swatch.cancelled { background:#9ca3af; } .swatch.expired { background:#ec4899; }
.err { max-width:240px; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; display:block;
  color:#991b1b; }
section.failure { border:1px solid #fca5a5; background:#fef2f2; border-radius:6px;
  padding:2px 12px 10px; margin:10px 0 14px; }
section.failure h2 { margin:8px 0 6px; color:#991b1b; }
section.failure div { overflow-wrap:anywhere; }
th { white-space:nowrap; }
table.jobs th, table.jobs td { padding:7px 8px; } table.jobs td span[title] { white-space:nowrap; }
th a.sort { color:inherit; text-decoration:none; } th a.sort:hover { text-decoration:underline; }
th a.sort.on { color:var(--accent); }
.muted { color:var(--muted); } h2 .muted { font-weight:400; font-size:13px; }
details summary { cursor:pointer; color:var(--muted); font-size:12px; }
a.card { color:inherit; text-decoration:none; } a.card:hover { border-color:#93c5fd; }
"""

# Polling re-reads the page and swaps <main>, so the server stays the only renderer.
# It pauses while the tab is hidden or a form field has focus (so typing is not lost).
JS = """
(function () {
  document.addEventListener('submit', function (ev) {
    var msg = ev.target.getAttribute('data-confirm');
    if (msg && !window.confirm(msg)) { ev.preventDefault(); }
  });
  // The search box's autocomplete: fields and frequent values from the store, as
  // whole queries in its <datalist> (the server completes; nothing is rendered as HTML).
  document.addEventListener('input', function (ev) {
    var box = ev.target, from = box.getAttribute && box.getAttribute('data-suggest');
    var list = from && document.getElementById(box.getAttribute('list'));
    if (!list) { return; }
    var typed = box.value;
    fetch(from + '?q=' + encodeURIComponent(typed), {credentials: 'same-origin'})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data || box.value !== typed) { return; }  // a later keystroke wins
        list.replaceChildren.apply(list, data.suggestions.map(function (s) {
          var o = document.createElement('option'); o.value = s; return o;
        }));
      }).catch(function () {});
  });
  var main = document.getElementById('main');
  var every = main && parseInt(main.getAttribute('data-refresh') || '0', 10);
  if (!every) { return; }
  setInterval(function () {
    if (document.hidden) { return; }
    var el = document.activeElement;
    if (el && /INPUT|SELECT|TEXTAREA|BUTTON/.test(el.tagName)) { return; }
    fetch(window.location.href, {credentials: 'same-origin'}).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (text) {
      if (!text) { return; }
      var doc = new DOMParser().parseFromString(text, 'text/html');
      var fresh = doc.getElementById('main');
      if (fresh) { main.innerHTML = fresh.innerHTML; }
    }).catch(function () {});
  }, every);
})();
"""
