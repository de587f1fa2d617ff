package viz

// The page's own stylesheet and scripts, inlined by the report template.

// errorCatcherJS runs before anything else on the page. A script error or
// a console.error (echarts reports bad options there) is listed in a
// banner at the top of the page instead of leaving a chart silently
// blank; the browser test reads the same list.
const errorCatcherJS = `(function () {
  var errs = [];
  function show(msg) {
    errs.push(String(msg));
    var el = document.getElementById("report-errors");
    if (!el) {
      el = document.createElement("pre");
      el.id = "report-errors";
      el.className = "card fail";
      (document.body || document.documentElement).insertBefore(el, document.body ? document.body.firstChild : null);
    }
    el.textContent = "This report failed to render completely:\n" + errs.join("\n");
  }
  window.addEventListener("error", function (e) { show(e.message + " (" + e.filename + ":" + e.lineno + ")"); });
  var orig = console.error;
  console.error = function () { show(Array.prototype.join.call(arguments, " ")); return orig.apply(console, arguments); };
})();`

// reportJS draws the charts: xdssim.chart(id, option, runtime) sets a
// chart's option, with runtime.patch merged into it (objects key by key,
// an object into every element of an array), formats virtual time
// (milliseconds on time axes, seconds on a heatmap's columns) as durations
// in axis labels and tooltips, escapes every name it
// puts in a tooltip, and joins every chart over virtual time to one group so
// that zooming one zooms all. Charts follow the window's size.
const reportJS = `var xdssim = (function () {
  "use strict";
  var all = [];
  var esc = function (s) { return echarts.format.encodeHTML(String(s)); };
  function dur(s) {
    if (typeof s !== "number" || !isFinite(s)) { return String(s); }
    var neg = s < 0;
    s = Math.abs(s);
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = Math.round((s % 60) * 1000) / 1000;
    var out = h ? h + "h" + m + "m" + r + "s" : (m ? m + "m" + r + "s" : r + "s");
    return (neg ? "-" : "") + out;
  }
  function num(v) {
    if (typeof v !== "number") { return esc(v); }
    return Math.abs(v) >= 1000 ? v.toFixed(0) : String(+v.toPrecision(4));
  }
  function timeTip(ps) {
    if (!ps.length) { return ""; }
    var out = "<b>" + dur(ps[0].value[0] / 1000) + "</b>";
    for (var i = 0; i < ps.length; i++) {
      out += "<br>" + ps[i].marker + esc(ps[i].seriesName) + ": <b>" + num(ps[i].value[1]) + "</b>";
    }
    return out;
  }
  function merge(dst, src) {
    for (var k in src) {
      var d = dst[k], v = src[k];
      if (Array.isArray(d) && v && typeof v === "object" && !Array.isArray(v)) {
        for (var i = 0; i < d.length; i++) { merge(d[i], v); }
      } else if (d && typeof d === "object" && !Array.isArray(d) && v && typeof v === "object" && !Array.isArray(v)) {
        merge(d, v);
      } else {
        dst[k] = v;
      }
    }
  }
  function chart(id, option, rt) {
    var c = echarts.init(document.getElementById(id), null, { renderer: "canvas" });
    if (rt.time) {
      option.yAxis[0].nameTextStyle = { align: "left" };
      if (option.yAxis[1]) { option.yAxis[1].nameTextStyle = { align: "right" }; }
      option.xAxis[0].axisLabel = { formatter: function (v) { return dur(v / 1000); } };
      option.tooltip.formatter = timeTip;
    }
    if (rt.states) {
      var rows = option.yAxis[0].data;
      option.xAxis[0].axisLabel = { formatter: function (v) { return dur(+v); } };
      option.tooltip.formatter = function (p) {
        var v = p.value;
        return esc(rows[v[1]]) + "<br>" + dur(v[0] * rt.columns) + " to " + dur((v[0] + 1) * rt.columns) + ": <b>" + esc(rt.states[v[2]]) + "</b>";
      };
    }
    if (rt.patch) { merge(option, rt.patch); }
    c.setOption(option);
    if (rt.time) {
      c.group = "time";
      echarts.connect("time");
    }
    all.push(c);
  }
  window.addEventListener("resize", function () {
    for (var i = 0; i < all.length; i++) { all[i].resize(); }
  });
  return { chart: chart };
})();`

const reportCSS = `
body{margin:0;padding:16px;background:#f3f4f6;color:#1f2328;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
.card{box-sizing:border-box;max-width:1240px;margin:0 auto 16px;background:#fff;border:1px solid #d8dde3;border-radius:8px;padding:16px 20px}
.chart{width:100%;margin:0 0 4px}
h3.chart-title{margin:14px 0 2px 8px;font-size:15px;font-weight:600;color:#1f2328;overflow-wrap:anywhere}
.empty{margin-top:10px}
h1{margin:0 0 4px;font-size:22px}
h1 .brand{color:#6b7280;font-weight:500}
h2{margin:18px 0 8px;font-size:17px}
.card>h2:first-child{margin-top:0}
.desc{margin:0 0 12px;color:#374151}
.lead{margin:0 0 8px;color:#4b5563;max-width:900px}
.muted{color:#6b7280}
dl.facts{display:flex;flex-wrap:wrap;gap:8px 28px;margin:12px 0 0}
dl.facts div{min-width:110px}
dt{color:#6b7280;font-size:12px;text-transform:uppercase;letter-spacing:.04em}
dd{margin:0;font-size:17px;font-variant-numeric:tabular-nums}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(160px,1fr));gap:10px;margin:16px 0 4px}
.figure{display:block;color:inherit;text-decoration:none;border:1px solid #d8dde3;border-left:4px solid #d8dde3;border-radius:6px;padding:8px 10px}
.figure:hover{border-color:#9aa3ad}
.figure.good{border-left-color:#2e9d5b}
.figure.warn{border-left-color:#e0a526}
.figure.bad{border-left-color:#c9302c}
.figure .label{color:#4b5563;font-size:12px;text-transform:uppercase;letter-spacing:.03em}
.figure .value{font-size:24px;font-weight:600;font-variant-numeric:tabular-nums}
.figure.bad .value{color:#b42318}
.figure .note{color:#6b7280;font-size:12px}
nav{display:flex;flex-wrap:wrap;gap:4px 14px;margin-top:14px;padding-top:10px;border-top:1px solid #eceff2}
nav a{color:#2f5fa7;text-decoration:none}
nav a:hover{text-decoration:underline}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:3px 14px 3px 0;border-bottom:1px solid #eceff2;text-align:left;vertical-align:top}
th{font-weight:600;color:#4b5563}
.num{text-align:right}
.pass{color:#1a7f37;font-weight:600}
.fail{color:#cf222e;font-weight:700}
.whatif{border:2px solid #bf8700;background:#fff8c5;border-radius:6px;padding:0 12px 8px;margin:12px 0}
.whatif h2{color:#7d4e00}
.cause{white-space:nowrap;margin-right:12px}
.cause i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
details summary{cursor:pointer}
details summary h2{display:inline;margin:0}
table.fit{width:100%}
table.points{table-layout:fixed;font-size:12.5px}
table.points th,table.points td{overflow-wrap:anywhere;padding-right:8px}
.answer{border-left:4px solid #1a7f37;padding:2px 12px;background:#f6fef9;border-radius:4px}
.answer p{margin:6px 0}
.scroll{max-height:420px;overflow:auto;display:inline-block;padding-right:8px;margin-top:8px}
.scroll th{position:sticky;top:0;background:#fff}
code,pre{font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre.toml{margin:0;padding:12px;background:#f6f8fa;border-radius:6px;overflow:auto;white-space:pre}
footer.stamp{max-width:1240px;margin:0 auto;padding:4px 20px 8px;font-size:12px;overflow-wrap:anywhere}
`
