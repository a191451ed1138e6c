/*
 * dashboard.js - the page of `vkinrctl dashboard`: follows the server's
 * event stream (api/events: a snapshot, then every change, live) and draws
 * the queue, the curves of the chosen jobs (Chart.js) against the epoch,
 * the wall clock's time or the training time, the reconstruction
 * beside the target, and a batch's spread. Buttons call the server's POST
 * API with the token in a header; the daemon decides, as for vkinrctl.
 * EventSource reconnects by itself; a stream refused outright is opened
 * again every few seconds.
 */
'use strict';

const token = document.body.dataset.token;
const jobs = new Map();   /* id -> job object */
const hist = new Map();   /* id -> {epoch:[], psnr:[], live:[], mse:[], lr:[], t:[], time:[]} */
const compare = new Set();
let focus = null;
let daemon = { connected: false, why: 'connecting', uid: -1 };
let dirty = { queue: true, curves: true, batch: true, pics: true };
const COLORS = ['#e8710a', '#1a73e8', '#12b5cb', '#e52592', '#9334e6',
	'#f9ab00', '#7cb342', '#5f6368'];
const KEYS = ['epoch', 'psnr', 'live', 'mse', 'lr', 't', 'time'];
const MAX_POINTS = 2000; /* a dataset drawn, at most */

const $ = (id) => document.getElementById(id);
const num = (v, d) => (v === null || v === undefined || !isFinite(v)) ? '-' : Number(v).toFixed(d);
const api = (path) => path + (path.includes('?') ? '&' : '?') + 'token=' + token;

function idOrder(a, b) { return Number(a) - Number(b); }

function duration(s) {
	if (!isFinite(s) || s < 0) return '-';
	s = Math.round(s);
	const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = s % 60;
	const two = (v) => String(v).padStart(2, '0');
	return h ? `${h}:${two(m)}:${two(x)}` : `${m}:${two(x)}`;
}

let sayTimer = null;
function say(text) { /* a note at the top, gone after a while */
	$('msg').textContent = text || '';
	clearTimeout(sayTimer);
	sayTimer = setTimeout(() => { $('msg').textContent = ''; }, 10000);
}

/* ---- the stream ---- */

function emptyHist() { const h = {}; KEYS.forEach((k) => { h[k] = []; }); return h; }

function addPoint(p) {
	let h = hist.get(p.job);
	if (!h) { h = emptyHist(); hist.set(p.job, h); }
	/* an epoch run again (after a daemon restart) replaces the first run */
	while (h.epoch.length && h.epoch[h.epoch.length - 1] >= p.epoch)
		KEYS.forEach((k) => h[k].pop());
	KEYS.forEach((k) => h[k].push(p[k]));
	const j = jobs.get(p.job);
	if (j && p.epoch >= (j.epoch || 0)) {
		j.epoch = p.epoch; j.psnr = p.psnr; j.live_psnr = p.live;
		j.mse = p.mse; j.ms = p.ms;
	}
}

function touch(all) {
	dirty.queue = dirty.batch = true;
	if (all) dirty.curves = dirty.pics = true;
}

function connect() {
	const es = new EventSource(api('api/events'));
	$('stream').textContent = 'stream: connecting';
	es.onopen = () => { $('stream').textContent = 'stream: live'; $('stream').className = 'badge ok'; };
	es.addEventListener('reset', (e) => {
		const s = JSON.parse(e.data);
		jobs.clear(); hist.clear();
		s.jobs.forEach((j) => jobs.set(String(j.id), j));
		daemon = s.daemon;
		showDaemon();
		touch(true);
	});
	es.addEventListener('history', (e) => {
		const h = JSON.parse(e.data);
		hist.set(String(h.job), h);
		touch(h.job === focus || compare.has(h.job));
		dirty.curves = true;
	});
	es.addEventListener('progress', (e) => {
		const p = JSON.parse(e.data);
		addPoint(p);
		touch(false);
		if (p.job === focus || compare.has(p.job)) dirty.curves = true;
	});
	es.addEventListener('job', (e) => {
		const j = JSON.parse(e.data);
		const old = jobs.get(String(j.id));
		jobs.set(String(j.id), j);
		touch(false);
		if (String(j.id) === focus && (!old || old.state !== j.state)) dirty.pics = true;
	});
	es.addEventListener('removed', (e) => {
		const id = JSON.parse(e.data).job;
		jobs.delete(id); hist.delete(id); compare.delete(id);
		if (focus === id) focus = null;
		touch(true);
	});
	es.addEventListener('daemon', (e) => { daemon = JSON.parse(e.data); showDaemon(); });
	es.onerror = () => {
		$('stream').textContent = 'stream: reconnecting';
		$('stream').className = 'badge bad';
		if (es.readyState === EventSource.CLOSED) { /* refused: try again */
			setTimeout(connect, 3000);
		}
	};
}

function showDaemon() {
	const el = $('daemon');
	el.textContent = daemon.connected ? 'daemon: connected' : 'daemon: ' + (daemon.why || 'not connected');
	el.className = 'badge ' + (daemon.connected ? 'ok' : 'bad');
}

/* ---- the queue ---- */

function eta(j) {
	if (j.state !== 'running') return '-';
	const h = hist.get(String(j.id));
	let ms = j.ms;
	if (h && h.epoch.length) { /* the mean of the last 20 epochs */
		const tail = h.t.slice(-21);
		if (tail.length > 1) ms = 1000 * (tail[tail.length - 1] - tail[0]) / (tail.length - 1);
	}
	return duration((j.epochs - j.epoch) * ms / 1000);
}

function act(method, id, button) {
	if (method === 'cancel' && button.dataset.sure !== '1') {
		button.dataset.sure = '1'; button.textContent = 'cancel?';
		setTimeout(() => { button.dataset.sure = ''; button.textContent = 'cancel'; }, 3000);
		return;
	}
	button.disabled = true;
	say(method + ' job ' + id + '...');
	fetch('api/' + method + '?job=' + encodeURIComponent(id),
		{ method: 'POST', headers: { 'X-Vkinr-Token': token } })
		.then((r) => r.json().then((b) => ({ ok: r.ok, b })))
		.then(({ ok, b }) => {
			say(ok ? `job ${b.job}: ${b.state}` : `${method} job ${id}: ${b.error}`);
			if (ok && jobs.get(id)) { jobs.get(id).state = b.state; touch(false); }
		})
		.catch((e) => say(`${method} job ${id}: ${e}`))
		.finally(() => { button.disabled = false; });
}

function buttons(j) {
	const id = String(j.id), td = document.createElement('td');
	const add = (m) => {
		const b = document.createElement('button');
		b.textContent = m; b.className = 'act-' + m; b.dataset.job = id;
		b.addEventListener('click', (e) => { e.stopPropagation(); act(m, id, b); });
		td.appendChild(b);
	};
	if (j.state === 'running' || j.state === 'queued') add('pause');
	if (j.state === 'paused' || j.state === 'failed') add('resume');
	if (j.state === 'running' || j.state === 'queued' || j.state === 'paused') add('cancel');
	return td;
}

function cell(tr, text, cls) {
	const td = document.createElement('td');
	td.textContent = text;
	if (cls) td.className = cls;
	tr.appendChild(td);
	return td;
}

function fillBatches(select, keep) {
	const batches = [...new Set([...jobs.values()].map((j) => j.batch).filter((b) => b))].sort();
	const had = [...select.options].map((o) => o.value).filter((v) => v);
	if (had.join() === batches.join()) return;
	const cur = select.value;
	[...select.options].forEach((o) => { if (o.value || !keep) o.remove(); });
	batches.forEach((b) => { const o = document.createElement('option'); o.value = o.textContent = b; select.appendChild(o); });
	select.value = batches.includes(cur) ? cur : (keep ? '' : (batches[0] || ''));
}

function drawQueue() {
	fillBatches($('f-batch'), true);
	const fs = $('f-state').value, fb = $('f-batch').value;
	const tbody = $('jobs').tBodies[0];
	const rows = [];
	const counts = {};
	[...jobs.keys()].sort(idOrder).forEach((id) => {
		const j = jobs.get(id);
		counts[j.state] = (counts[j.state] || 0) + 1;
		if ((fs && j.state !== fs) || (fb && j.batch !== fb)) return;
		const tr = document.createElement('tr');
		tr.dataset.job = id;
		tr.dataset.state = j.state;
		if (id === focus) tr.className = 'focus';
		const td = document.createElement('td'), cb = document.createElement('input');
		cb.type = 'checkbox'; cb.checked = compare.has(id);
		cb.addEventListener('click', (e) => {
			e.stopPropagation();
			if (cb.checked) compare.add(id); else compare.delete(id);
			dirty.curves = true; schedule();
		});
		td.appendChild(cb); tr.appendChild(td);
		cell(tr, id);
		cell(tr, j.name || '');
		cell(tr, j.state, 'st-' + j.state);
		cell(tr, `${j.epoch}/${j.epochs}`, 'num');
		cell(tr, num(j.psnr, 2), 'num');
		cell(tr, num(j.live_psnr, 2), 'num');
		cell(tr, eta(j), 'num');
		cell(tr, j.device || '-', 'dev').title = j.device || '';
		cell(tr, j.batch || '');
		tr.appendChild(buttons(j));
		tr.addEventListener('click', () => setFocus(id));
		rows.push(tr);
	});
	tbody.replaceChildren(...rows);
	$('counts').textContent = Object.keys(counts).sort().map((s) => `${counts[s]} ${s}`).join(', ');
}

function setFocus(id) {
	focus = id;
	const j = jobs.get(id);
	if (j && j.batch) $('b-select').value = j.batch;
	dirty = { queue: true, curves: true, batch: true, pics: true };
	schedule();
}

/* ---- the curves ---- */

/* TensorBoard's smoothing: an exponential moving average, debiased. */
function smooth(ys, w) {
	if (!w) return ys;
	let last = 0, n = 0;
	return ys.map((y) => {
		if (y === null || !isFinite(y)) return y;
		last = last * w + (1 - w) * y; n++;
		return last / (1 - Math.pow(w, n));
	});
}

/* an epoch kept before the daemon recorded times has none: not drawn
 * against the wall clock */
function series(xs, ys) {
	const step = Math.max(1, Math.ceil(xs.length / MAX_POINTS)), out = [];
	const ok = (i) => ys[i] !== null && isFinite(ys[i]) && xs[i] !== null && isFinite(xs[i]);
	for (let i = 0; i < xs.length; i += step)
		if (ok(i)) out.push({ x: xs[i], y: ys[i] });
	const k = xs.length - 1; /* the newest is always drawn */
	if (k >= 0 && k % step && ok(k)) out.push({ x: xs[k], y: ys[k] });
	return out;
}

const charts = {};

/* ---- the axes: round ticks, each label its own ----
 * Chart.js's own ticks put fractional epochs and negative times on a
 * short run and can give neighbours one label; the ticks are chosen here
 * instead: whole epochs, the wall clock's round times (local), round
 * values of 1, 2 or 5 times a power of ten (on the MSE's log scale the
 * decades, or round values within one), every label as precise as it
 * takes to differ from its neighbours. */

const CLOCK_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600,
	7200, 10800, 21600, 43200, 86400];

function niceStep(span, n) {
	const raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / mag;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

/* t rounded down to a multiple of step in local time */
function clockFloor(t, step) {
	const off = -new Date(t * 1000).getTimezoneOffset() * 60;
	return Math.floor((t + off) / step + 1e-9) * step - off;
}

function clockLabel(v, step) {
	const d = new Date(v * 1000), two = (x) => String(x).padStart(2, '0');
	if (step >= 86400) return `${two(d.getMonth() + 1)}-${two(d.getDate())}`;
	const hm = `${two(d.getHours())}:${two(d.getMinutes())}`;
	return step >= 60 ? hm : `${hm}:${two(d.getSeconds())}`;
}

/* Labels of ticks step apart, one notation for the axis (powers of ten
 * when its values are all tiny or huge), with the decimals the step
 * needs, more while two would read the same. */
function distinct(ticks, step) {
	const big = Math.max(...ticks.map((v) => Math.abs(v)));
	const expo = big > 0 && (big < 1e-3 || big >= 1e6);
	const mag = (v) => Math.floor(Math.log10(v) + 1e-9);
	let d = Math.max(0, expo ? mag(big) - mag(step) : -mag(step));
	for (; d < 15; d++) {
		const out = ticks.map((v) => (Math.abs(v) < step * 1e-6 ? '0'
			: expo ? v.toExponential(d) : v.toFixed(d)));
		if (new Set(out).size === out.length) return out;
	}
	return ticks.map((v) => String(v));
}

/* Ticks for data from lo to hi: {min, max, values, labels}. kind: 'epoch',
 * 'clock' (Unix seconds), 'log', or 'value' (never below 0 when the data
 * is not). */
function axisTicks(lo, hi, kind) {
	if (!isFinite(lo) || !isFinite(hi)) { lo = kind === 'log' ? 0.01 : 0; hi = kind === 'log' ? 1 : 1; }
	const values = [], labels = [];
	let step, min, max;
	if (kind === 'log') {
		if (hi / lo >= 10) { /* decades */
			min = Math.pow(10, Math.floor(Math.log10(lo) + 1e-9));
			max = Math.pow(10, Math.ceil(Math.log10(hi) - 1e-9));
			const few = max / min <= 100;
			for (let e = Math.log10(min); e <= Math.log10(max) + 1e-9; e++)
				(few ? [1, 2, 5] : [1]).forEach((m) => {
					if (m * Math.pow(10, e) <= max * 1.0001) {
						values.push(m * Math.pow(10, e)); labels.push(`${m}e${Math.round(e)}`);
					}
				});
			return { min, max, values, labels };
		}
		if (hi - lo < hi * 1e-6) { lo *= 0.95; hi *= 1.05; }
		step = niceStep(hi - lo, 4);
		min = Math.floor(lo / step + 1e-9) * step;
		if (min <= 0) min = lo;
		max = Math.ceil(hi / step - 1e-9) * step;
	} else if (kind === 'clock') {
		step = CLOCK_STEPS.find((c) => c * 6 >= Math.max(hi - lo, 1)) || 86400 * Math.ceil((hi - lo) / 6 / 86400);
		min = clockFloor(lo, step);
		max = clockFloor(hi, step);
		if (max < hi - 1e-9 || max <= min) max += step;
		for (let v = min; v <= max + step * 1e-6; v += step) values.push(v);
		return { min, max, values, labels: values.map((v) => clockLabel(v, step)) };
	} else {
		if (hi - lo < Math.abs(hi) * 1e-9 + 1e-12) { /* one value */
			const pad = kind === 'epoch' ? 1 : Math.abs(hi) * 0.05 || 1;
			hi += pad; lo = lo >= 0 && lo - pad < 0 ? 0 : lo - pad;
		}
		step = niceStep(hi - lo, 5);
		if (kind === 'epoch') step = Math.max(1, Math.round(step));
		min = Math.floor(lo / step + 1e-9) * step;
		max = Math.ceil(hi / step - 1e-9) * step;
	}
	const first = Math.ceil(min / step - 1e-9) * step;
	for (let v = first; v <= max + step * 1e-6; v += step) values.push(Math.round(v / step) * step);
	return { min, max, values, labels: distinct(values, step) };
}

/* the range of a chart's datasets on one axis ('x' or 'y') */
function range(sets, k, positive) {
	let lo = Infinity, hi = -Infinity;
	sets.forEach((d) => d.data.forEach((p) => {
		if (!isFinite(p[k]) || (positive && p[k] <= 0)) return;
		lo = Math.min(lo, p[k]); hi = Math.max(hi, p[k]);
	}));
	return [lo, hi];
}

/* puts the ticks on a chart's scale (its options) */
function applyTicks(opts, t) {
	opts.min = t.min; opts.max = t.max;
	opts.afterBuildTicks = (scale) => { scale.ticks = t.values.map((value) => ({ value })); };
	opts.ticks = Object.assign(opts.ticks || {}, {
		autoSkip: true,
		callback: (v, i) => t.labels[i] ?? '',
	});
}

/* the x axis of the curves (kind) and each chart's y axis */
function setAxes(chart, xkind, ylog) {
	const sets = chart.data.datasets;
	applyTicks(chart.options.scales.x, axisTicks(...range(sets, 'x'), xkind));
	applyTicks(chart.options.scales.y, axisTicks(...range(sets, 'y', ylog), ylog ? 'log' : 'value'));
}

function lineChart(id, title, ylog) {
	return new Chart($(id), {
		type: 'line',
		data: { datasets: [] },
		options: {
			animation: false, parsing: false, normalized: true,
			maintainAspectRatio: false, spanGaps: true,
			elements: { point: { radius: 0 }, line: { borderWidth: 1.5 } },
			interaction: { mode: 'nearest', intersect: false },
			plugins: { title: { display: true, text: title },
				legend: { labels: { boxWidth: 12 } } },
			scales: { x: { type: 'linear', title: { display: true, text: 'epoch' } },
				y: { type: ylog ? 'logarithmic' : 'linear' } },
		},
	});
}

function drawCurves() {
	const ids = [...new Set([focus, ...compare].filter((id) => id && jobs.has(id)))];
	const xk = $('x-axis').value, w = Number($('smooth').value);
	const sets = { psnr: [], mse: [], lr: [] };
	ids.forEach((id, i) => {
		const h = hist.get(id) || emptyHist(), c = COLORS[i % COLORS.length];
		const name = jobs.get(id).name ? `${id} ${jobs.get(id).name}` : `job ${id}`;
		const xs = h[xk];
		sets.psnr.push({ label: name + ' model', data: series(xs, h.psnr), borderColor: c, backgroundColor: c });
		sets.psnr.push({ label: name + ' live', data: series(xs, smooth(h.live, w)), borderColor: c + '88', backgroundColor: c + '88', borderDash: [4, 3] });
		sets.mse.push({ label: name, data: series(xs, smooth(h.mse, w)), borderColor: c, backgroundColor: c });
		sets.lr.push({ label: name, data: series(xs, h.lr), borderColor: c, backgroundColor: c });
	});
	const first = Math.min(...ids.map((id) => (hist.get(id) || emptyHist()).time.find((v) => isFinite(v)) ?? Infinity));
	const xt = xk === 'epoch' ? 'epoch' : xk === 't' ? 'training time (s)'
		: 'wall-clock time (local' + (isFinite(first) ? ', ' + new Date(first * 1000).toLocaleDateString() : '') + ')';
	const xkind = xk === 'epoch' ? 'epoch' : xk === 'time' ? 'clock' : 'value';
	let points = 0;
	for (const k of ['psnr', 'mse', 'lr']) {
		const ch = charts[k];
		ch.data.datasets = sets[k];
		ch.options.scales.x.title.text = xt;
		setAxes(ch, xkind, k === 'mse');
		ch.update('none');
	}
	sets.psnr.forEach((s) => { points += s.data.length; });
	$('c-psnr').dataset.points = points;
	$('curve-jobs').textContent = ids.length ? 'jobs ' + ids.join(', ') : 'click a job';
}

/* ---- the pictures ---- */

let picTimer = null, picUrl = { recon: null, target: null }, picFor = null;

function showPic(which, id, path, note) {
	return fetch(api(path + '?job=' + encodeURIComponent(id)))
		.then((r) => r.ok ? r.blob() : r.json().then((b) => Promise.reject(new Error(b.error))))
		.then((blob) => {
			if (focus !== id) return;
			if (picUrl[which]) URL.revokeObjectURL(picUrl[which]);
			picUrl[which] = URL.createObjectURL(blob);
			$(which).src = picUrl[which];
			$(note).textContent = which === 'recon' ? 'at ' + new Date().toLocaleTimeString() : '';
		})
		.catch((e) => { if (focus === id) { $(which).removeAttribute('src'); $(note).textContent = e.message; } });
}

function drawPics() {
	clearTimeout(picTimer);
	const j = focus && jobs.get(focus);
	$('pic-job').textContent = j ? `job ${focus} ${j.name || ''}` : 'click a job';
	if (!j) return;
	if (j.uid !== daemon.uid && daemon.uid !== 0) {
		$('recon').removeAttribute('src'); $('target').removeAttribute('src');
		$('recon-note').textContent = `uid ${j.uid}'s job: its pictures are its owner's`;
		$('target-note').textContent = '';
		return;
	}
	const id = focus;
	if (picFor !== id) { picFor = id; showPic('target', id, 'api/target', 'target-note'); }
	if (!(j.epoch > 0)) { $('recon-note').textContent = 'not started'; return; }
	showPic('recon', id, 'api/preview', 'recon-note').then(() => {
		/* refreshed while it trains and the page is seen */
		const cur = jobs.get(id);
		if (focus === id && cur && cur.state === 'running')
			picTimer = setTimeout(() => { if (!document.hidden) drawPics(); else dirty.pics = true; }, 4000);
	});
}

/* ---- a batch ---- */

function valueAt(h, epoch) { /* the model's PSNR after that epoch, if it has it */
	let lo = 0, hi = h.epoch.length - 1;
	while (lo <= hi) {
		const mid = (lo + hi) >> 1;
		if (h.epoch[mid] === epoch) return h.psnr[mid];
		if (h.epoch[mid] < epoch) lo = mid + 1; else hi = mid - 1;
	}
	return null;
}

/*
 * A batch's mean and spread of the PSNR over epochs 1..last (a point
 * every last/300 epochs): members are job objects, hist their histories
 * by id. A job that has ended (done, failed, cancelled) counts after its
 * last epoch at its final PSNR (the job's, else its history's last), as
 * in `vkinrctl plot --summary`: a batch whose best jobs stop early at
 * --target-psnr does not seem to fall as they leave, and the curve ends
 * at the final PSNRs' mean. Pure, so tests run it on the server's data.
 */
function batchBand(members, hist, last) {
	const ended = (j) => j.state === 'done' || j.state === 'failed' || j.state === 'cancelled';
	const series = members.map((j) => {
		const h = hist.get(String(j.id));
		if (!h || !h.epoch.length) return null;
		const fin = j.psnr !== null && j.psnr !== undefined && isFinite(j.psnr) ? j.psnr : h.psnr[h.psnr.length - 1];
		return { h, end: h.epoch[h.epoch.length - 1], fin: ended(j) ? fin : null };
	}).filter((s) => s);
	const step = Math.max(1, Math.ceil(last / 300)), mean = [], lo = [], hi = [];
	for (let e = step; e <= last; e += step) {
		const v = series.map((s) => (e > s.end ? s.fin : valueAt(s.h, e))).filter((y) => y !== null && isFinite(y));
		if (!v.length) continue;
		const m = v.reduce((a, y) => a + y, 0) / v.length;
		const sd = Math.sqrt(v.reduce((a, y) => a + (y - m) * (y - m), 0) / v.length);
		mean.push({ x: e, y: m }); lo.push({ x: e, y: m - sd }); hi.push({ x: e, y: m + sd });
	}
	return { mean, lo, hi };
}

function drawBatch() {
	fillBatches($('b-select'), false);
	const b = $('b-select').value;
	const members = [...jobs.values()].filter((j) => b && j.batch === b);
	const done = members.filter((j) => j.state === 'done').length;
	let epochs = 0, total = 0, last = 0;
	members.forEach((j) => { epochs += j.epoch; total += j.epochs; last = Math.max(last, j.epoch); });
	const pct = total ? 100 * epochs / total : 0;
	$('b-bar').style.width = pct.toFixed(1) + '%';
	$('b-summary').textContent = b ? `${members.length} jobs, ${done} done, ${pct.toFixed(1)}% of the epochs` : 'no batch';

	/* mean and spread of the PSNR over the epochs */
	const { mean, lo, hi } = batchBand(members, hist, last);
	const band = charts.band;
	band.data.datasets = [
		{ label: 'mean - sd', data: lo, borderColor: '#1a73e833', backgroundColor: '#1a73e822', fill: false },
		{ label: 'mean + sd', data: hi, borderColor: '#1a73e833', backgroundColor: '#1a73e822', fill: '-1' },
		{ label: 'mean PSNR', data: mean, borderColor: '#1a73e8', backgroundColor: '#1a73e8' },
	];
	setAxes(band, 'epoch', false);
	band.update('none');

	/* the final (or latest) PSNRs */
	const finals = members.map((j) => j.psnr).filter((y) => y !== null && isFinite(y));
	const hc = charts.hist;
	if (finals.length) {
		const min = Math.floor(Math.min(...finals)), max = Math.ceil(Math.max(...finals) + 1e-9);
		const bins = Math.max(1, Math.min(20, Math.ceil((max - min) / 0.5))), w = (max - min) / bins || 1;
		const counts = new Array(bins).fill(0);
		finals.forEach((y) => { counts[Math.min(bins - 1, Math.floor((y - min) / w))]++; });
		hc.data.labels = counts.map((_, i) => (min + i * w).toFixed(1));
		hc.data.datasets = [{ label: 'jobs by PSNR (dB)', data: counts, backgroundColor: '#e8710a' }];
	} else {
		hc.data.labels = []; hc.data.datasets = [];
	}
	hc.update('none');

	const rows = members.slice().sort((a, c) => (a.psnr ?? -1) - (c.psnr ?? -1)).map((j) => {
		const tr = document.createElement('tr'), id = String(j.id);
		cell(tr, id); cell(tr, j.name || ''); cell(tr, j.state, 'st-' + j.state);
		cell(tr, num(j.psnr, 2), 'num'); cell(tr, `${j.epoch}/${j.epochs}`, 'num');
		tr.addEventListener('click', () => setFocus(id));
		return tr;
	});
	$('worst').tBodies[0].replaceChildren(...rows);
}

/* ---- drawing, at most every quarter second ---- */

let scheduled = false;
function schedule() {
	if (scheduled) return;
	scheduled = true;
	setTimeout(() => {
		scheduled = false;
		const d = dirty;
		dirty = { queue: false, curves: false, batch: false, pics: false };
		if (d.queue) drawQueue();
		if (d.curves) drawCurves();
		if (d.batch) drawBatch();
		if (d.pics) drawPics();
	}, 250);
}

function start() {
	charts.psnr = lineChart('c-psnr', 'PSNR (dB): model, and live dashed');
	charts.mse = lineChart('c-mse', 'MSE', true);
	charts.lr = lineChart('c-lr', 'learning rate');
	charts.band = lineChart('c-band', 'batch PSNR: mean and spread');
	charts.hist = new Chart($('c-hist'), {
		type: 'bar', data: { labels: [], datasets: [] },
		options: { animation: false, maintainAspectRatio: false,
			plugins: { title: { display: true, text: 'final PSNR (dB)' }, legend: { display: false } } },
	});
	$('f-state').addEventListener('change', () => { dirty.queue = true; schedule(); });
	$('f-batch').addEventListener('change', () => { dirty.queue = true; schedule(); });
	$('b-select').addEventListener('change', () => { dirty.batch = true; schedule(); });
	$('x-axis').addEventListener('change', () => { dirty.curves = true; schedule(); });
	$('smooth').addEventListener('input', () => {
		$('smooth-v').textContent = Number($('smooth').value).toFixed(2);
		dirty.curves = true; schedule();
	});
	document.addEventListener('visibilitychange', () => { if (!document.hidden) { dirty.pics = true; schedule(); } });
	/* redraw when news came in */
	setInterval(() => { if (Object.values(dirty).some((v) => v)) schedule(); }, 250);
	connect();
}

window.dash = { jobs, hist, compare, charts, setFocus, get focus() { return focus; } };
start();
