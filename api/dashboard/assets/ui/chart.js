// Charts drawn as SVG by hand: no library, no font, nothing loaded. A chart
// is a few lines over time, one per series, with its axis labels, a legend,
// and a title that names what it shows.

const NS = 'http://www.w3.org/2000/svg';
const COLORS = ['#2457c5', '#c2410c', '#1e7b34', '#7c3aed', '#b3261e', '#0e7490', '#9a6700', '#be185d'];
const W = 520;
const H = 150;
const PAD = {left: 44, right: 8, top: 8, bottom: 20};

function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten.
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) {
    if (v <= m * p) return m * p;
  }
  return 10 * p;
}

function fmt(v) {
  if (v === 0) return '0';
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1).replace(/\.0$/, '');
  return v.toPrecision(2).replace(/\.?0+$/, '');
}

function clock(t) {
  const d = new Date(t);
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
}

// lineChart draws series ([{name, values}], values one per step from
// `from`, each step `step` ms) as an SVG figure titled title, values in
// unit. The figure carries data-points (the number of non-zero values) for
// tests and the title as its accessible name.
export function lineChart({title, unit, from, step, series}) {
  const n = Math.max(1, ...series.map((s) => s.values.length));
  const top = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const x = (i) => PAD.left + (W - PAD.left - PAD.right) * (n === 1 ? 0.5 : i / (n - 1));
  const y = (v) => H - PAD.bottom - (H - PAD.top - PAD.bottom) * (v / top);
  const root = svg('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title});
  for (const f of [0, 0.5, 1]) {
    const yy = y(top * f);
    root.append(svg('line', {x1: PAD.left, x2: W - PAD.right, y1: yy, y2: yy, class: 'grid'}),
      svg('text', {x: PAD.left - 4, y: yy + 4, class: 'axis', 'text-anchor': 'end'}, fmt(top * f)));
  }
  for (const i of [0, Math.floor((n - 1) / 2), n - 1]) {
    root.append(svg('text', {x: x(i), y: H - 4, class: 'axis', 'text-anchor': i === 0 ? 'start' : i === n - 1 ? 'end' : 'middle'},
      clock(from + i * step)));
  }
  let points = 0;
  series.forEach((s, k) => {
    const color = COLORS[k % COLORS.length];
    const pts = s.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`);
    points += s.values.filter((v) => v > 0).length;
    root.append(svg('polyline', {points: pts.join(' '), fill: 'none', stroke: color, 'stroke-width': 1.5,
      'data-series': s.name}));
    s.values.forEach((v, i) => {
      if (v > 0) {
        root.append(svg('circle', {cx: x(i), cy: y(v), r: 2, fill: color},
          svg('title', {}, `${s.name} ${clock(from + i * step)}: ${fmt(v)} ${unit}`)));
      }
    });
  });
  const legend = document.createElement('ul');
  legend.className = 'legend';
  series.forEach((s, k) => {
    const li = document.createElement('li');
    const sw = document.createElement('span');
    sw.className = `swatch c${k % COLORS.length}`;
    li.append(sw, s.name);
    legend.append(li);
  });
  const fig = document.createElement('figure');
  fig.className = 'chart';
  fig.dataset.points = String(points);
  const cap = document.createElement('figcaption');
  cap.textContent = `${title} (${unit})`;
  fig.append(cap, root, legend);
  return fig;
}

// seriesOf turns /v1/stats rows with series (stepMs, since) into chart
// series over [from, now]: calls/s and p95 latency in ms, zeros where no
// call began.
export function seriesOf(doc, rows, now) {
  const step = doc.stepMs;
  const from = Date.parse(doc.since);
  const n = Math.max(1, Math.ceil((now - from) / step));
  const rate = [];
  const p95 = [];
  for (const r of rows) {
    const c = new Array(n).fill(0);
    const l = new Array(n).fill(0);
    for (const b of r.series || []) {
      const i = Math.round((Date.parse(b.start) - from) / step);
      if (i >= 0 && i < n) {
        c[i] = b.count / (step / 1000);
        l[i] = b.p95Ms;
      }
    }
    rate.push({name: r.key, values: c});
    p95.push({name: r.key, values: l});
  }
  return {from, step, rate, p95};
}
