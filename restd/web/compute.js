// Drover dashboard, the compute view: nodes, partitions and cluster totals
// from GET /slurm/v0.0.40/nodes, GPU holders from /drover/v0.0.40/gpus, and
// the "where can a job start now?" filter. Loaded after app.js (whose
// helpers and state it uses); plain JavaScript, text set with textContent.
'use strict';
/** "gpu:a100:2(S:0),gpu:1" -> [{name, type, count}] (as scontrol prints). */
function gresList(s) {
  const out = [];
  for (const part of (s || '').split(/,(?![^()]*\))/)) {
    const p = part.replace(/\(.*\)$/, '').split(':');
    if (!p[0] || p[0] === '(null)') continue;
    const count = Number(p[p.length - 1]);
    if (!Number.isFinite(count)) continue;
    out.push({ name: p[0], type: p.length > 2 ? p[1] : '', count });
  }
  return out;
}
function gpuSum(list, type) {
  return list.filter((g) => g.name === 'gpu' && (!type || g.type === type)).reduce((a, g) => a + g.count, 0);
}
function nodeRow(x) {
  const base = ((x.state && x.state[0]) || 'UNKNOWN').toLowerCase();
  const flags = (x.state || []).slice(1).map((s) => s.toLowerCase());
  const drain = flags.includes('drain'), down = base === 'down' || flags.includes('not_responding');
  const label = drain ? (base === 'idle' || base === 'down' ? 'drained' : 'draining') : base;
  const total = gresList(x.gres), used = gresList(x.gres_used);
  const types = [...new Set(total.filter((g) => g.name === 'gpu').map((g) => g.type))];
  return {
    name: x.name, state: label, flags, reason: x.reason || '', usable: !drain && !down && ['idle', 'mixed'].includes(base),
    cpus: x.cpus || 0, cpusUsed: x.alloc_cpus || 0, mem: x.real_memory || 0, memUsed: x.alloc_memory || 0,
    gpus: gpuSum(total), gpusUsed: gpuSum(used), byType: types.map((t) => ({ type: t, total: gpuSum(total, t), used: gpuSum(used, t) })),
    features: (x.features || []).join(','), partitions: x.partitions || [],
  };
}
const NODE_COLS = [
  { key: 'name', label: 'Node' },
  { key: 'state', label: 'State' },
  { key: 'cpus', label: 'CPUs used/total', num: true, sort: (r) => r.cpus - r.cpusUsed },
  { key: 'mem', label: 'Memory used/total', num: true, sort: (r) => r.mem - r.memUsed },
  { key: 'gpus', label: 'GPUs used/total', num: true, sort: (r) => r.gpus - r.gpusUsed },
  { key: 'holders', label: 'GPU holders' },
  { key: 'features', label: 'Features' },
  { key: 'partitions', label: 'Partitions', sort: (r) => r.partitions.join(',') },
];
function usage(used, total, f) {
  const frag = document.createDocumentFragment();
  const pct = total ? Math.round((100 * used) / total) : 0;
  const fill = el('i');
  fill.style.width = pct + '%'; // through the CSSOM: the page's CSP allows no style attributes
  const bar = el('span', { cls: 'bar', role: 'img', 'aria-label': pct + '% used' }, fill);
  frag.append(bar, (f || String)(used) + ' / ' + (f || String)(total));
  return frag;
}
function fitOf(r) {
  const f = S.fit;
  if (!f) return true;
  if (!r.usable) return false;
  const freeGpus = f.type ? r.byType.filter((t) => t.type === f.type).reduce((a, t) => a + t.total - t.used, 0) : r.gpus - r.gpusUsed;
  return r.cpus - r.cpusUsed >= f.cpus && r.mem - r.memUsed >= f.mem && freeGpus >= f.gpus;
}
function renderCompute() {
  if (S.computeError) {
    S.nodes = [];
    $('#totals').replaceChildren(el('div', { cls: 'card', role: 'alert' }, el('div', { cls: 'k', text: 'Nodes cannot be shown' }), el('div', { text: S.computeError })));
  }
  const rows = S.nodes;
  // Cluster and partition totals.
  const sum = (list) => {
    const t = { nodes: list.length, cpus: 0, cpusUsed: 0, mem: 0, memUsed: 0, gpus: 0, gpusUsed: 0, states: {}, types: {} };
    for (const r of list) {
      t.cpus += r.cpus; t.cpusUsed += r.cpusUsed; t.mem += r.mem; t.memUsed += r.memUsed; t.gpus += r.gpus; t.gpusUsed += r.gpusUsed;
      t.states[r.state] = (t.states[r.state] || 0) + 1;
      for (const g of r.byType) { const k = g.type || 'gpu'; t.types[k] = t.types[k] || { used: 0, total: 0 }; t.types[k].used += g.used; t.types[k].total += g.total; }
    }
    return t;
  };
  const c = sum(rows);
  const card = (k, v, id) => el('div', { cls: 'card', 'data-total': id }, el('div', { cls: 'k', text: k }), el('div', { cls: 'v', text: v }));
  const cards = [
    card('Nodes', Object.entries(c.states).map(([s, k]) => k + ' ' + s).join(', ') || '0', 'nodes'),
    card('CPUs used / total', c.cpusUsed + ' / ' + c.cpus, 'cpus'),
    card('Memory used / total', mem(c.memUsed) + ' / ' + mem(c.mem), 'mem'),
    card('GPUs used / total', c.gpusUsed + ' / ' + c.gpus, 'gpus'),
  ];
  for (const [t, g] of Object.entries(c.types)) cards.push(card('GPUs ' + t, g.used + ' / ' + g.total, 'gpu-' + t));
  if (!S.computeError) $('#totals').replaceChildren(...cards);
  const parts = new Map();
  for (const r of rows) for (const p of r.partitions) { if (!parts.has(p)) parts.set(p, []); parts.get(p).push(r); }
  $('#parts-head').replaceChildren(...['Partition', 'Nodes', 'CPUs used/total', 'Memory used/total', 'GPUs used/total'].map((h) => el('th', { scope: 'col', text: h })));
  const pb = [...parts.entries()].sort().map(([p, list]) => {
    const t = sum(list);
    return el('tr', { 'data-part': p }, el('td', { text: p }), el('td', { text: Object.entries(t.states).map(([s, k]) => k + ' ' + s).join(', ') }),
      el('td', { cls: 'num' }, usage(t.cpusUsed, t.cpus)), el('td', { cls: 'num' }, usage(t.memUsed, t.mem, mem)), el('td', { cls: 'num' }, usage(t.gpusUsed, t.gpus)));
  });
  $('#parts-body').replaceChildren(...(pb.length ? pb : [el('tr', null, el('td', { colspan: 5, cls: 'empty', text: 'No partitions.' }))]));
  // Nodes, sortable; the fit filter hides what cannot start the job now.
  const hold = new Map();
  for (const g of S.gpus) {
    const k = g.node; if (!hold.has(k)) hold.set(k, []);
    hold.get(k).push((g.type ? g.type + ' ' : '') + '#' + g.index + ': ' + g.job_id + ' (' + g.user_name + ')');
  }
  const ns = S.nodeSort, col = NODE_COLS.find((x) => x.key === ns.key) || NODE_COLS[0];
  const key = col.sort || ((r) => r[col.key]);
  let list = rows.filter(fitOf);
  list.sort((a, b) => { const x = key(a), y = key(b); return (typeof x === 'number' ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true })) * ns.dir; });
  $('#nodes-head').replaceChildren(...NODE_COLS.map((h) => {
    const th = el('th', { scope: 'col', cls: h.num ? 'num' : '' });
    if (ns.key === h.key) th.setAttribute('aria-sort', ns.dir > 0 ? 'ascending' : 'descending');
    th.append(el('button', { type: 'button', text: h.label, onclick: () => { S.nodeSort = ns.key === h.key ? { key: h.key, dir: -ns.dir } : { key: h.key, dir: h.num ? -1 : 1 }; renderCompute(); } }));
    return th;
  }));
  const nb = list.map((r) => {
    const st = el('td', { 'data-k': 'state' }, stateBadge(r.state, r.reason, ['idle', 'mixed', 'allocated', 'down', 'drained', 'draining'].includes(r.state) ? r.state : 'other'));
    const gtxt = r.byType.length > 1 || (r.byType[0] && r.byType[0].type) ? r.byType.map((t) => (t.type || 'gpu') + ' ' + t.used + '/' + t.total).join(', ') : null;
    return el('tr', { 'data-node': r.name },
      el('td', { text: r.name }), st,
      el('td', { cls: 'num', 'data-k': 'cpus', 'data-used': r.cpusUsed, 'data-total': r.cpus }, usage(r.cpusUsed, r.cpus)),
      el('td', { cls: 'num', 'data-k': 'mem', 'data-used': r.memUsed, 'data-total': r.mem }, usage(r.memUsed, r.mem, mem)),
      el('td', { cls: 'num', 'data-k': 'gpus', 'data-used': r.gpusUsed, 'data-total': r.gpus, title: gtxt || '' }, usage(r.gpusUsed, r.gpus), gtxt ? el('span', { cls: 'reason', text: '(' + gtxt + ')' }) : null),
      el('td', { 'data-k': 'holders', text: (hold.get(r.name) || []).join('; ') }),
      el('td', { text: r.features }), el('td', { text: r.partitions.join(',') }));
  });
  const empty = S.fit ? 'No node can start this job now.' : 'No nodes.';
  $('#nodes-body').replaceChildren(...(nb.length ? nb : [el('tr', null, el('td', { colspan: NODE_COLS.length, cls: 'empty', text: empty }))]));
  const fr = $('#fit-result');
  fr.textContent = S.fit ? (list.length ? list.length + ' node' + (list.length > 1 ? 's' : '') + ' can start it now: ' + list.map((r) => r.name).join(', ') : 'No node can start it now.') : '';
  fr.className = S.fit && !list.length ? 'none' : '';
}
async function loadCompute() {
  const [nv, gv] = await Promise.all([api('GET', API + '/nodes'), api('GET', DR + '/gpus').catch(() => ({ gpus: [] }))]);
  S.nodes = (nv.nodes || []).map(nodeRow);
  S.gpus = gv.gpus || [];
}
$('#fit').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const v = (id) => Number($(id).value) || 0;
  S.fit = { cpus: v('#fit-cpus'), mem: Math.round(v('#fit-mem') * 1024), gpus: v('#fit-gpus'), type: $('#fit-type').value.trim() };
  renderCompute();
});
$('#fit-clear').addEventListener('click', () => { S.fit = null; $('#fit').reset(); renderCompute(); });
