/*
 * test_pack.c - fits trained in a pack give what they give alone, bit for
 * bit: jobs of different image sizes, epochs, rates, seeds and recipes,
 * joining and leaving the pack between epochs, one of them stopping
 * mid-way (as a paused or cancelled job does), on the Vulkan device (the
 * packed shader variants on lavapipe in CI); and their exports made
 * together are each one's own; fits joining and leaving take and free
 * slots of the packed programs without recording them again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "nn/fit.h"
#include "nn/fit_internal.h"
#include "nn/pack.h"
#include "nn/package.h"
#include "formats/safetensors.h"
#include "unit/support_gpu.h"

#define JOBS 5

/* What each job is: size, epochs, and a recipe of its own. */
struct job_spec {
	int w, h, epochs, seed, muon, first_epoch, stop_at;
	double lr;
};

/* Four share a recipe (different sizes, rates, seeds, epochs) and one
 * uses Adam alone, so the pack holds two groups. Job 2 joins at epoch 4;
 * job 3 stops at epoch 7 (paused or cancelled). */
static const struct job_spec specs[JOBS] = {
	{ 16, 16, 12, 1, 1, 0, 0, 1e-3 }, { 12, 10, 9, 2, 1, 0, 0, 2e-3 },
	{ 9, 13, 12, 3, 1, 4, 0, 1e-3 },  { 16, 16, 12, 4, 1, 0, 7, 5e-4 },
	{ 14, 11, 10, 5, 0, 0, 0, 1e-3 },
};

/* fp32, or (the second test) the default, which takes the tensor cores
 * where the device has them and trains the last twentieth in fp32 */
static enum nn_precision precision = NN_PRECISION_FP32;

static void job_config(const struct job_spec *s, struct nn_config *cfg)
{
	nn_config_defaults(cfg, 1);
	cfg->precision = precision;
	cfg->nf = 16;
	cfg->seed = (uint64_t)s->seed;
	cfg->epochs = s->epochs;
	cfg->lr = s->lr;
	cfg->recipe.warmup = 2;
	if (!s->muon)
		cfg->recipe.optimizer = NN_OPTIMIZER_ADAM;
}

static struct nn_fit *make_fit(int j, struct image **img)
{
	struct nn_config cfg;
	char err[256];
	struct nn_fit *fit = NULL;
	job_config(&specs[j], &cfg);
	*img = test_image(specs[j].w, specs[j].h, 10 + (uint64_t)j);
	assert_int_equal(
	    nn_fit_create(&fit, test_gpu, *img, &cfg, NULL, err, sizeof(err)),
	    0);
	return fit;
}

static int last_epoch(int j)
{
	return specs[j].stop_at ? specs[j].stop_at : specs[j].epochs;
}

static void read_weights(struct nn_fit *fit, float **w)
{
	size_t bytes = fit->layout.total * sizeof(float);
	*w = malloc(bytes);
	assert_non_null(*w);
	assert_int_equal(nn_fit_read_params(fit, *w, NULL, NULL), 0);
}

static void test_pack_equals_alone(void **state)
{
	(void)state;
	test_need_gpu();
	if (!nn_pack_supported(test_gpu))
		skip();
	struct nn_fit *alone[JOBS], *packed[JOBS];
	struct image *img[JOBS], *img2[JOBS];
	for (int j = 0; j < JOBS; j++) {
		alone[j] = make_fit(j, &img[j]);
		struct nn_metrics m;
		while (nn_fit_epoch(alone[j]) < last_epoch(j))
			assert_int_equal(nn_fit_step(alone[j], &m), 0);
		packed[j] = make_fit(j, &img2[j]);
	}

	struct nn_pack *pack;
	assert_int_equal(nn_pack_create(&pack, test_gpu), 0);
	int max_groups = 0;
	for (int epoch = 0;; epoch++) {
		struct nn_fit *list[JOBS];
		int n = 0;
		for (int j = 0; j < JOBS; j++)
			if (epoch >= specs[j].first_epoch &&
			    nn_fit_epoch(packed[j]) < last_epoch(j))
				list[n++] = packed[j];
		if (!n)
			break;
		struct nn_metrics m[JOBS];
		int rcs[JOBS];
		assert_int_equal(nn_pack_step(pack, list, n, m, rcs), 0);
		for (int i = 0; i < n; i++)
			assert_int_equal(rcs[i], 0);
		int groups, fits;
		nn_pack_shape(pack, &groups, &fits);
		assert_int_equal(fits, n);
		max_groups = groups > max_groups ? groups : max_groups;
	}
	assert_true(max_groups >= 2);
	nn_pack_destroy(pack);

	/* Bit for bit on CPU devices, where the packed variant compiles to
	 * the same arithmetic; a GPU's compiler may contract the packed
	 * variant's products into fused multiply-adds differently (it is
	 * another shader: buffers by address), so there the PSNR agrees
	 * within 0.01 dB. In any pack, a job's results are bit for bit the
	 * same (test_pack_neighbours). */
	int exact = gpu_info(test_gpu)->is_cpu;
	for (int j = 0; j < JOBS; j++) {
		float *a, *b;
		read_weights(alone[j], &a);
		read_weights(packed[j], &b);
		if (exact)
			assert_memory_equal(
			    a, b, alone[j]->layout.total * sizeof(float));
		int na, nb;
		const struct nn_metrics *ha = nn_fit_history(alone[j], &na);
		const struct nn_metrics *hb = nn_fit_history(packed[j], &nb);
		assert_int_equal(na, nb);
		for (int e = 0; e < na; e++) {
			if (!exact) {
				assert_true(fabs(ha[e].psnr - hb[e].psnr) <
					    0.01);
				continue;
			}
			assert_true(ha[e].psnr == hb[e].psnr);
			assert_true(ha[e].psnr_average == hb[e].psnr_average);
			assert_true(ha[e].psnr_best == hb[e].psnr_best);
		}
		struct nn_best ba, bb;
		nn_fit_best(alone[j], &ba);
		nn_fit_best(packed[j], &bb);
		assert_true(fabs(ba.psnr - bb.psnr) < 0.01);
		if (exact)
			assert_true(ba.psnr == bb.psnr && ba.epoch == bb.epoch);
		free(a);
		free(b);
		nn_fit_destroy(alone[j]);
		nn_fit_destroy(packed[j]);
		image_destroy(img[j]);
		image_destroy(img2[j]);
	}
}

/* The exports of a pack's fits made together (nn_pack_export) are each
 * fit's nn_fit_export, and so are checkpoints made from state read back
 * together (nn_fits_read_ahead): the same weights chosen, package and image, bit
 * for bit on CPU devices (within 0.01 dB on a GPU, whose packed render is
 * another shader), and the live weights left in place. Jobs 0, 1 and 4
 * are exported; 2 and 3 go on. */
static void test_pack_export_equals_alone(void **state)
{
	(void)state;
	test_need_gpu();
	if (!nn_pack_supported(test_gpu))
		skip();
	struct nn_fit *fits[JOBS];
	struct image *img[JOBS];
	for (int j = 0; j < JOBS; j++)
		fits[j] = make_fit(j, &img[j]);
	struct nn_pack *pack;
	assert_int_equal(nn_pack_create(&pack, test_gpu), 0);
	struct nn_metrics m[JOBS];
	int rcs[JOBS];
	for (int e = 0; e < 9; e++)
		assert_int_equal(nn_pack_step(pack, fits, JOBS, m, rcs), 0);
	/* three candidates to choose from: live, average, best kept */
	assert_true(fits[0]->average.handle && fits[0]->kept.epoch >= 0);
	float *before;
	read_weights(fits[2], &before);
	int want[JOBS] = { 1, 1, 0, 0, 1 };
	struct nn_export ex[JOBS];
	assert_int_equal(nn_pack_export(pack, fits, JOBS, want, 1, 1, ex), 0);
	int exact = gpu_info(test_gpu)->is_cpu;
	for (int j = 0; j < JOBS; j++) {
		if (!want[j]) {
			assert_null(ex[j].model);
			continue;
		}
		assert_int_equal(ex[j].rc, 0);
		struct st_file *model;
		struct image *recon;
		double psnr;
		assert_int_equal(nn_fit_export(fits[j], &model, &recon, &psnr),
				 0);
		assert_true(fabs(psnr - ex[j].psnr) < 0.01);
		uint8_t *a, *b;
		size_t na, nb;
		assert_int_equal(st_encode(model, &a, &na), 0);
		assert_int_equal(st_encode(ex[j].model, &b, &nb), 0);
		if (exact) {
			assert_true(psnr == ex[j].psnr);
			assert_int_equal(na, nb);
			assert_memory_equal(a, b, na);
			assert_memory_equal(recon->rgb, ex[j].recon->rgb,
					    (size_t)recon->width *
						recon->height * 3 *
						sizeof(float));
		}
		free(a);
		free(b);
		st_destroy(model);
		image_destroy(recon);
		st_destroy(ex[j].model);
		image_destroy(ex[j].recon);
	}
	float *after;
	read_weights(fits[2], &after);
	assert_memory_equal(before, after,
			    fits[2]->layout.total * sizeof(float));
	free(before);
	free(after);
	/* checkpoints from state read back for all at once are each one's
	 * own, and a step drops what was read */
	int all[JOBS] = { 1, 1, 1, 1, 1 };
	assert_int_equal(nn_fits_read_ahead(fits, JOBS, all), 0);
	for (int j = 0; j < JOBS; j++) {
		struct st_file *ahead, *now;
		uint8_t *a, *b;
		size_t na, nb;
		assert_true(fits[j]->nahead > 0);
		assert_int_equal(nn_fit_checkpoint(fits[j], &ahead), 0);
		assert_int_equal(fits[j]->nahead, 0);
		assert_int_equal(nn_fit_checkpoint(fits[j], &now), 0);
		assert_int_equal(st_encode(ahead, &a, &na), 0);
		assert_int_equal(st_encode(now, &b, &nb), 0);
		assert_int_equal(na, nb);
		assert_memory_equal(a, b, na);
		free(a);
		free(b);
		st_destroy(ahead);
		st_destroy(now);
	}
	assert_int_equal(nn_fits_read_ahead(fits, JOBS, all), 0);
	assert_int_equal(nn_pack_step(pack, fits, JOBS, m, rcs), 0);
	assert_int_equal(fits[0]->nahead, 0);
	nn_pack_destroy(pack);
	for (int j = 0; j < JOBS; j++) {
		nn_fit_destroy(fits[j]);
		image_destroy(img[j]);
	}
}

/* Job 0 in a pack with jobs 1 and 4, then with job 3 alone: the same
 * weights, bit for bit, on every device. */
static void test_pack_neighbours(void **state)
{
	(void)state;
	test_need_gpu();
	if (!nn_pack_supported(test_gpu))
		skip();
	const int sets[2][3] = { { 0, 1, 4 }, { 0, 3, -1 } };
	float *w[2];
	for (int k = 0; k < 2; k++) {
		struct nn_fit *fits[3];
		struct image *img[3];
		int n = 0;
		for (int i = 0; i < 3 && sets[k][i] >= 0; i++)
			fits[n++] = make_fit(sets[k][i], &img[i]);
		struct nn_pack *pack;
		assert_int_equal(nn_pack_create(&pack, test_gpu), 0);
		for (int e = 0; e < 6; e++) {
			struct nn_metrics m[3];
			int rcs[3];
			assert_int_equal(nn_pack_step(pack, fits, n, m, rcs),
					 0);
		}
		nn_pack_destroy(pack);
		read_weights(fits[0], &w[k]);
		for (int i = 0; i < n; i++) {
			nn_fit_destroy(fits[i]);
			image_destroy(img[i]);
		}
	}
	struct nn_layout l;
	struct nn_config cfg;
	job_config(&specs[0], &cfg);
	nn_layout_init(&l, &cfg);
	assert_memory_equal(w[0], w[1], l.total * sizeof(float));
	free(w[0]);
	free(w[1]);
}

/* A pack whose fits join and leave one by one: eight fits of one recipe
 * (images of 12x12, one of 12x10, one of 20x20), each joining at its own epoch of the
 * pack and training its own number of epochs; the one of 20x20 needs more
 * workgroups than the programs were recorded for. The newcomers take the
 * slots the others left (or free ones) without the programs being
 * recorded again, save where a newcomer does not fit them, and every fit
 * ends as it does alone. */
static void test_pack_slots(void **state)
{
	(void)state;
	test_need_gpu();
	if (!nn_pack_supported(test_gpu))
		skip();
	enum { N = 8 };
	/* w, h, epochs, seed, muon, first_epoch */
	static const struct job_spec slot_specs[N] = {
		{ 12, 12, 10, 1, 1, 0, 0, 1e-3 },
		{ 12, 12, 6, 2, 1, 0, 0, 2e-3 },
		{ 12, 10, 9, 3, 1, 1, 0, 1e-3 },
		{ 12, 12, 7, 4, 1, 2, 0, 5e-4 },
		{ 12, 12, 7, 5, 1, 3, 0, 1e-3 },
		{ 12, 12, 4, 6, 1, 0, 0, 1e-3 },
		{ 20, 20, 5, 7, 1, 5, 0, 1e-3 },
		{ 12, 12, 4, 8, 1, 7, 0, 2e-3 },
	};
	struct nn_fit *alone[N], *packed[N];
	struct image *img[N], *img2[N];
	for (int j = 0; j < N; j++) {
		struct nn_config cfg;
		char err[256];
		job_config(&slot_specs[j], &cfg);
		img[j] = test_image(slot_specs[j].w, slot_specs[j].h,
				    30 + (uint64_t)j);
		img2[j] = test_image(slot_specs[j].w, slot_specs[j].h,
				     30 + (uint64_t)j);
		assert_int_equal(nn_fit_create(&alone[j], test_gpu, img[j],
					       &cfg, NULL, err, sizeof(err)),
				 0);
		assert_int_equal(nn_fit_create(&packed[j], test_gpu, img2[j],
					       &cfg, NULL, err, sizeof(err)),
				 0);
		struct nn_metrics m;
		while (nn_fit_epoch(alone[j]) < slot_specs[j].epochs)
			assert_int_equal(nn_fit_step(alone[j], &m), 0);
	}
	struct nn_pack *pack;
	assert_int_equal(nn_pack_create(&pack, test_gpu), 0);
	int changes = 0, last = -1;
	for (int epoch = 0;; epoch++) {
		struct nn_fit *list[N];
		int n = 0, key = 0;
		for (int j = 0; j < N; j++)
			if (epoch >= slot_specs[j].first_epoch &&
			    nn_fit_epoch(packed[j]) < slot_specs[j].epochs) {
				list[n++] = packed[j];
				key |= 1 << j;
			}
		if (!n)
			break;
		changes += key != last;
		last = key;
		struct nn_metrics m[N];
		int rcs[N];
		assert_int_equal(nn_pack_step(pack, list, n, m, rcs), 0);
		for (int i = 0; i < n; i++)
			assert_int_equal(rcs[i], 0);
	}
	/* the first list and the 20x20 newcomer (and the 12x10 one, on a
	 * device whose programs for it are not alike the 12x12 ones): not
	 * one build a change */
	int builds = nn_pack_builds(pack);
	if (builds > 4)
		fprintf(stderr, "# %d builds for %d changes\n", builds,
			changes);
	assert_true(builds >= 1 && builds <= 4);
	assert_true(changes >= 8 && builds < changes);
	nn_pack_destroy(pack);
	int exact = gpu_info(test_gpu)->is_cpu;
	for (int j = 0; j < N; j++) {
		int na, nb;
		const struct nn_metrics *ha = nn_fit_history(alone[j], &na);
		const struct nn_metrics *hb = nn_fit_history(packed[j], &nb);
		assert_int_equal(na, nb);
		for (int e = 0; e < na; e++)
			assert_true(exact
					? ha[e].psnr == hb[e].psnr
					: fabs(ha[e].psnr - hb[e].psnr) < 0.01);
		if (exact) {
			float *a, *b;
			read_weights(alone[j], &a);
			read_weights(packed[j], &b);
			assert_memory_equal(
			    a, b, alone[j]->layout.total * sizeof(float));
			free(a);
			free(b);
		}
		nn_fit_destroy(alone[j]);
		nn_fit_destroy(packed[j]);
		image_destroy(img[j]);
		image_destroy(img2[j]);
	}
}

static void test_pack_equals_alone_auto(void **state)
{
	precision = NN_PRECISION_AUTO;
	test_pack_equals_alone(state);
	precision = NN_PRECISION_FP32;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack_equals_alone),
		cmocka_unit_test(test_pack_equals_alone_auto),
		cmocka_unit_test(test_pack_neighbours),
		cmocka_unit_test(test_pack_export_equals_alone),
		cmocka_unit_test(test_pack_slots),
	};
	return cmocka_run_group_tests(tests, test_gpu_setup, test_gpu_teardown);
}
