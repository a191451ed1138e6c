/*
 * test_variants.c - unit tests of daemon/nn/variants.c, the engine's
 * choices, over made-up devices (an NVIDIA GPU with tensor cores, one
 * whose tensor cores go through VK_KHR_cooperative_matrix, a GPU without
 * them, lavapipe, a CPU device of narrow subgroups): the defaults each
 * gets, and, for every combination of the switches, widths and
 * precisions, the same choices as the engine made before they were data
 * (old_picks below is that code, transcribed: fit.c's choose_gemm and
 * choose_precision, record.c's get_pipelines and nn_use_* functions;
 * since then its choose_gemm takes the "cpu16" GEMMs at widths up to 16
 * on CPU devices, as variants.c does).
 * Also the switches' reading from the environment (daemon/gpu/switches.c),
 * and that the families the engine picks by itself are vkinrd's own
 * shaders, not the benchmarks' (shaders/variants_bench.txt).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu/gpu.h"
#include "gpu/shaders.h"
#include "nn/gemm.h"
#include "nn/variants.h"

enum { NVIDIA, KHR_GPU, PLAIN_GPU, LAVAPIPE, NARROW_CPU, DEVICES };

static struct gpu_device_info device(int kind)
{
	struct gpu_device_info d;
	memset(&d, 0, sizeof(d));
	d.is_cpu = kind == LAVAPIPE || kind == NARROW_CPU;
	d.subgroup_size = kind == LAVAPIPE ? 8 : kind == NARROW_CPU ? 4 : 32;
	d.coopmat_api = kind == NVIDIA ? "nv" : kind == KHR_GPU ? "khr" : NULL;
	d.has_tensor_cores = d.coopmat_api != NULL;
	d.has_coopmat_nv = kind == NVIDIA;
	d.has_coopmat_khr = kind == NVIDIA || kind == KHR_GPU;
	d.has_coopmat2 = kind == NVIDIA;
	return d;
}

static struct gpu_switches no_switches(void)
{
	struct gpu_switches sw;
	memset(&sw, 0, sizeof(sw));
	sw.passes = -1;
	sw.dw_tiled = -1;
	return sw;
}

/* ------------------------------------------- the engine before (cf612f1) */

/* What a recording took: recorder's fields after get_pipelines. */
struct old_picks {
	int cpu, fused, rows, row_blocks, strips, tiled, pairs;
	int half, half_s, phase_out;
	const struct gemm_variant *gemm;
};

static const struct gemm_variant *old_gemm(const struct gpu_device_info *info,
					   const struct gpu_switches *sw,
					   int half, int nf)
{
	const struct gemm_variant *v =
	    gemm_variant_find(sw->gemm[0] ? sw->gemm : NULL);
	if (v && v->half == half && gemm_variant_runs(v, info->coopmat_api))
		return v;
	if (half && nf <= 32)
		return gemm_variant_find("coop32");
	if (half && nf <= 64)
		return gemm_variant_find("coop64");
	if (half)
		return gemm_variant_find("coop");
	if (info->is_cpu && info->subgroup_size >= 8)
		return gemm_variant_find(nf <= 16 ? "cpu16" : "cpu");
	if (info->is_cpu || nf < 128)
		return gemm_variant_find("small");
	return gemm_variant_find("large");
}

/* fit precision p, a recording of it (exact32: its exact render) */
static struct old_picks old_picks(const struct gpu_device_info *info,
				  const struct gpu_switches *sw,
				  enum nn_precision p, int nf, int exact32)
{
	struct old_picks o = { 0 };
	int use_cpu = sw->passes == 1 ? 1 : sw->passes == 0 ? 0 : info->is_cpu;
	int use_fused = !use_cpu && !sw->fused_sine_off;
	int use_strips = use_fused && !sw->dw_strip_off;
	int fit_half_storage =
	    p == NN_PRECISION_FP16 && use_fused && !sw->half_storage_off;
	const struct gemm_variant *fit_gemm =
	    old_gemm(info, sw, p == NN_PRECISION_FP16, nf);
	const struct gemm_variant *fit_gemm32 = old_gemm(info, sw, 0, nf);
	/* VKINR_GEMM_PHASE unset (the switch is gone, and its path) */
	int gemm_phase = 0;
	int fit_phase_out =
	    fit_half_storage && fit_gemm->half_out && gemm_phase;
	o.cpu = use_cpu;
	o.half = p == NN_PRECISION_FP16 && !exact32;
	o.half_s = fit_half_storage && !exact32;
	o.gemm = exact32 ? fit_gemm32 : fit_gemm;
	o.rows = o.cpu && !o.half;
	o.row_blocks = o.rows && !sw->dw_rows;
	o.fused = use_fused;
	o.tiled =
	    o.fused && sw->dw_tiled != 0 && (!o.half_s || sw->dw_tiled == 1);
	o.strips = use_strips;
	o.pairs = o.strips && !sw->dw_pair_off;
	o.phase_out = o.half_s && fit_phase_out;
	return o;
}

/* new == old, in what each recording does: record_dwconv tried strips,
 * then rows, then tiled, then per pixel. */
static void check_same(const struct nn_variants *v, const struct old_picks *o)
{
	assert_int_equal(v->cpu, o->cpu);
	assert_int_equal(v->fused, o->fused);
	assert_int_equal(v->half, o->half);
	assert_int_equal(v->half_s, o->half_s);
	assert_false(o->phase_out); /* what the recording no longer has */
	assert_ptr_equal(v->gemm, o->gemm);
	enum nn_dw_family was = o->strips       ? NN_DW_STRIPS
				: o->row_blocks ? NN_DW_ROW_BLOCKS
				: o->rows       ? NN_DW_ROWS
				: o->tiled      ? NN_DW_TILED
						: NN_DW_PIXELS;
	assert_int_equal(v->dw, was);
	assert_int_equal(v->pairs, o->pairs);
}

/* ------------------------------------------------------------ the tests */

static struct nn_variants resolve(int kind, const struct gpu_switches *sw,
				  enum nn_precision p, int nf)
{
	struct gpu_device_info d = device(kind);
	return nn_variants_resolve(&d, sw, p, nf);
}

/* The defaults, device by device (the table of the commit that made the
 * choices data). */
static void test_defaults(void **state)
{
	struct gpu_switches sw = no_switches();
	/* an NVIDIA GPU, fp16: tensor cores, S in fp16, strips in pairs */
	struct nn_variants v = resolve(NVIDIA, &sw, NN_PRECISION_FP16, 512);
	assert_string_equal(v.gemm->name, "coop");
	assert_true(v.half && v.half_s && v.fused && !v.cpu && v.pairs);
	assert_int_equal(v.dw, NN_DW_STRIPS);
	assert_string_equal(
	    resolve(NVIDIA, &sw, NN_PRECISION_FP16, 64).gemm->name, "coop64");
	assert_string_equal(
	    resolve(NVIDIA, &sw, NN_PRECISION_FP16, 32).gemm->name, "coop32");
	assert_string_equal(
	    resolve(KHR_GPU, &sw, NN_PRECISION_FP16, 128).gemm->name, "coop");
	/* fp32 on a GPU (the exact renders, --precision fp32) */
	v = resolve(NVIDIA, &sw, NN_PRECISION_FP32, 512);
	assert_string_equal(v.gemm->name, "large");
	assert_true(!v.half && !v.half_s && v.fused && v.pairs);
	assert_int_equal(v.dw, NN_DW_STRIPS);
	assert_string_equal(
	    resolve(PLAIN_GPU, &sw, NN_PRECISION_FP32, 64).gemm->name, "small");
	/* lavapipe: the CPU passes, by blocks of rows, gemm_cpu */
	v = resolve(LAVAPIPE, &sw, NN_PRECISION_FP32, 64);
	assert_true(v.cpu && !v.fused && !v.half && !v.pairs);
	assert_int_equal(v.dw, NN_DW_ROW_BLOCKS);
	assert_string_equal(v.gemm->name, "cpu");
	assert_string_equal(
	    resolve(NARROW_CPU, &sw, NN_PRECISION_FP32, 64).gemm->name,
	    "small");
}

/* Each switch, on the device it is meant for. */
static void test_switches_pick(void **state)
{
	struct gpu_switches sw = no_switches();
	sw.dw_rows = 1;
	assert_int_equal(resolve(LAVAPIPE, &sw, NN_PRECISION_FP32, 16).dw,
			 NN_DW_ROWS);
	sw = no_switches();
	sw.passes = 0; /* the GPUs' passes on lavapipe */
	struct nn_variants v = resolve(LAVAPIPE, &sw, NN_PRECISION_FP32, 16);
	assert_true(!v.cpu && v.fused && v.dw == NN_DW_STRIPS);
	assert_string_equal(v.gemm->name, "cpu16");
	sw.dw_strip_off = 1; /* then the tiled forward */
	assert_int_equal(resolve(LAVAPIPE, &sw, NN_PRECISION_FP32, 16).dw,
			 NN_DW_TILED);
	/* which the fp16 path with S in fp16 takes with DW_TILED=1 alone */
	assert_int_equal(resolve(NVIDIA, &sw, NN_PRECISION_FP16, 16).dw,
			 NN_DW_PIXELS);
	sw.dw_tiled = 1;
	assert_int_equal(resolve(NVIDIA, &sw, NN_PRECISION_FP16, 16).dw,
			 NN_DW_TILED);
	sw.dw_tiled = 0;
	assert_int_equal(resolve(LAVAPIPE, &sw, NN_PRECISION_FP32, 16).dw,
			 NN_DW_PIXELS);
	sw = no_switches();
	sw.passes = 1; /* the CPU passes on a GPU */
	v = resolve(NVIDIA, &sw, NN_PRECISION_FP32, 512);
	assert_true(v.cpu && !v.fused && v.dw == NN_DW_ROW_BLOCKS);
	assert_string_equal(v.gemm->name, "large");
	sw = no_switches();
	strcpy(sw.gemm, "coop_emu"); /* fp32 operands: the fp32 path only */
	assert_string_equal(
	    resolve(LAVAPIPE, &sw, NN_PRECISION_FP32, 16).gemm->name,
	    "coop_emu");
	assert_string_equal(
	    resolve(NVIDIA, &sw, NN_PRECISION_FP16, 16).gemm->name, "coop32");
	strcpy(sw.gemm, "coop_16"); /* NV only: not through KHR */
	assert_string_equal(
	    resolve(NVIDIA, &sw, NN_PRECISION_FP16, 16).gemm->name, "coop_16");
	assert_string_equal(
	    resolve(KHR_GPU, &sw, NN_PRECISION_FP16, 16).gemm->name, "coop32");
	strcpy(sw.gemm, "cm2"); /* never picked by the engine */
	assert_string_equal(
	    resolve(NVIDIA, &sw, NN_PRECISION_FP16, 512).gemm->name, "coop");
}

/* Every device, width and precision with switches sw against the engine
 * before; returns how many choices were compared. */
static long check_all(const struct gpu_switches *sw)
{
	static const int widths[] = { 8, 16, 32, 48, 64, 96, 128, 512 };
	long checked = 0;
	for (int kind = 0; kind < DEVICES; kind++) {
		struct gpu_device_info d = device(kind);
		for (size_t w = 0; w < sizeof(widths) / sizeof(*widths); w++) {
			int nf = widths[w];
			struct nn_variants v32 =
			    nn_variants_resolve(&d, sw, NN_PRECISION_FP32, nf);
			struct old_picks o =
			    old_picks(&d, sw, NN_PRECISION_FP32, nf, 0);
			check_same(&v32, &o);
			checked++;
			if (!d.has_tensor_cores) /* fp16 is refused there */
				continue;
			struct nn_variants v =
			    nn_variants_resolve(&d, sw, NN_PRECISION_FP16, nf);
			o = old_picks(&d, sw, NN_PRECISION_FP16, nf, 0);
			check_same(&v, &o);
			checked++;
			/* the exact render of an fp16 fit: fit->vars32 */
			if (!(o.half && o.fused))
				continue;
			o = old_picks(&d, sw, NN_PRECISION_FP16, nf, 1);
			check_same(&v32, &o);
			checked++;
		}
	}
	return checked;
}

/* Every combination of the switches against the engine before. */
static void test_same_as_before(void **state)
{
	static const char *gemms[] = { "",      "coop",  "coop_emu",  "small",
				       "large", "cpu",   "coop_16",   "coop_8",
				       "cm2",   "bogus", "coop32_emu" };
	long checked = 0;
	for (int bits = 0; bits < 1 << 5; bits++)
		for (int passes = -1; passes <= 1; passes++)
			for (int tiled = -1; tiled <= 1; tiled++)
				for (size_t g = 0;
				     g < sizeof(gemms) / sizeof(*gemms); g++) {
					struct gpu_switches sw = no_switches();
					sw.passes = passes;
					sw.dw_tiled = tiled;
					sw.fused_sine_off = bits & 1;
					sw.dw_strip_off = bits >> 1 & 1;
					sw.dw_pair_off = bits >> 2 & 1;
					sw.dw_rows = bits >> 3 & 1;
					sw.half_storage_off = bits >> 4 & 1;
					strcpy(sw.gemm, gemms[g]);
					checked += check_all(&sw);
				}
	print_message("# %ld choices as before\n", checked);
}

/* The environment, as gpu_create reads it. */
static void test_switches_read(void **state)
{
	static const char *names[] = {
		"VKINR_PASSES",        "VKINR_FUSED_SINE",  "VKINR_DW_STRIP",
		"VKINR_DW_PAIR",       "VKINR_DW_ROWS",     "VKINR_DW_TILED",
		"VKINR_HALF_STORAGE",  "VKINR_GEMM_PHASE",  "VKINR_GEMM",
		"VKINR_AVERAGE_EVERY", "VKINR_FP32_FINISH",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		unsetenv(names[i]);
	struct gpu_switches sw;
	gpu_switches_read(&sw);
	assert_int_equal(sw.passes, -1);
	assert_int_equal(sw.dw_tiled, -1);
	assert_string_equal(sw.gemm, "");
	assert_false(sw.fused_sine_off || sw.dw_strip_off || sw.dw_pair_off ||
		     sw.dw_rows || sw.half_storage_off || sw.average_every ||
		     sw.has_fp32_finish);
	setenv("VKINR_PASSES", "gpu", 1);
	setenv("VKINR_FUSED_SINE", "0", 1);
	setenv("VKINR_DW_STRIP", "0", 1);
	setenv("VKINR_DW_PAIR", "0", 1);
	setenv("VKINR_DW_ROWS", "1", 1);
	setenv("VKINR_DW_TILED", "1", 1);
	setenv("VKINR_HALF_STORAGE", "0", 1);
	setenv("VKINR_GEMM", "coop_emu", 1);
	setenv("VKINR_AVERAGE_EVERY", "3", 1);
	setenv("VKINR_FP32_FINISH", "0.25", 1);
	gpu_switches_read(&sw);
	assert_int_equal(sw.passes, 0);
	assert_int_equal(sw.dw_tiled, 1);
	assert_string_equal(sw.gemm, "coop_emu");
	assert_true(sw.fused_sine_off && sw.dw_strip_off && sw.dw_pair_off &&
		    sw.dw_rows && sw.half_storage_off);
	assert_int_equal(sw.average_every, 3);
	assert_true(sw.has_fp32_finish && sw.fp32_finish == 0.25);
	/* values the engine never took */
	setenv("VKINR_PASSES", "CPU", 1);
	setenv("VKINR_FUSED_SINE", "no", 1);
	setenv("VKINR_DW_TILED", "2", 1);
	setenv("VKINR_AVERAGE_EVERY", "-2", 1);
	setenv("VKINR_FP32_FINISH", "1.5", 1);
	setenv("VKINR_GEMM", "a-name-far-longer-than-any-family-has", 1);
	gpu_switches_read(&sw);
	assert_int_equal(sw.passes, -1);
	assert_int_equal(sw.dw_tiled, -1);
	assert_false(sw.fused_sine_off || sw.average_every ||
		     sw.has_fp32_finish);
	assert_null(gemm_variant_find(sw.gemm));
	setenv("VKINR_PASSES", "cpu", 1);
	gpu_switches_read(&sw);
	assert_int_equal(sw.passes, 1);
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		unsetenv(names[i]);
}

/* Whether vkinrd's own table (not the benchmarks') has variant name. */
static int in_daemon(const char *name)
{
	for (const struct shader_blob *b = shader_table; b->name; b++)
		if (!strcmp(b->name, name))
			return 1;
	return 0;
}

/* The families the engine picks without VKINR_GEMM are vkinrd's (and
 * their packed twins); every other
 * family the tests and tools embed. */
static void test_engine_families_embedded(void **state)
{
	static const char *engine[] = { "small",  "large",  "coop",
					"coop32", "coop64", "cpu" };
	static const char *forms[] = { "nn", "tn", "nt" };
	for (size_t i = 0; i < sizeof(engine) / sizeof(*engine); i++) {
		const struct gemm_variant *v = gemm_variant_find(engine[i]);
		assert_non_null(v);
		for (int f = 0; f < 3; f++) {
			char name[40], pk[48];
			gemm_shader_name(v, forms[f], name, sizeof(name));
			snprintf(pk, sizeof(pk), "%s_pk", name);
			if (!in_daemon(name) || !in_daemon(pk))
				fail_msg("%s is not vkinrd's own", name);
		}
	}
	assert_false(in_daemon("gemm_nn_coop_8") ||
		     in_daemon("gemm_nn_coop_emu") ||
		     in_daemon("gemm_nnp_coop") || in_daemon("first_phase"));
	for (const struct gemm_variant *v = gemm_variants; v->name; v++)
		if (!v->cm2 && !gemm_variant_embedded(v))
			fail_msg("the tests lack the family %s", v->name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_switches_pick),
		cmocka_unit_test(test_same_as_before),
		cmocka_unit_test(test_switches_read),
		cmocka_unit_test(test_engine_families_embedded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
