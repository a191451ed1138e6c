/*
 * test_model.c - checks model.c against the spec: the initialisation
 * (same seed, same bits; the documented bounds; identity taps; zero
 * padding), the widths' defaults, the learning-rate schedules and the
 * recipe's keys. (The double-precision reference of the model is
 * test_ref.c's.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "nn/model.h"
#include "unit/support_layout.h"

static void test_init_reproducible(void **state)
{
	struct nn_config cfg;
	struct nn_layout l;
	float *a, *b;

	(void)state;
	nn_config_defaults(&cfg, 1);
	cfg.nf = 32;
	cfg.seed = 7;
	nn_layout_init(&l, &cfg);
	a = malloc(l.total * sizeof(float));
	b = malloc(l.total * sizeof(float));
	assert_true(a && b);
	nn_init_params(&cfg, &l, a);
	memset(b, 0xff, l.total * sizeof(float));
	nn_init_params(&cfg, &l, b);
	assert_memory_equal(a, b, l.total * sizeof(float));

	cfg.seed = 8;
	nn_init_params(&cfg, &l, b);
	assert_memory_not_equal(a + l.first_w, b + l.first_w,
				2 * 32 * sizeof(float));
	assert_memory_not_equal(a + l.out_w, b + l.out_w,
				3 * 32 * sizeof(float));
	free(a);
	free(b);
}

/* SplitMix64 from state 0: the published first outputs. */
static void test_rng_known_answers(void **state)
{
	struct nn_rng rng;

	(void)state;
	nn_rng_seed(&rng, 0);
	assert_true(nn_rng_next(&rng) == 0xe220a8397b1dcdafull);
	assert_true(nn_rng_next(&rng) == 0x6e789e6aa1b965f4ull);
	assert_true(nn_rng_next(&rng) == 0x06c45d188009454full);
}

static void check_bounded(const float *v, size_t n, double bound,
			  const char *name)
{
	double largest = 0;

	for (size_t i = 0; i < n; i++) {
		if (!(fabs(v[i]) <= bound))
			print_error("%s[%zu] = %g is beyond %g\n", name, i,
				    v[i], bound);
		assert_true(fabs(v[i]) <= bound);
		largest = fmax(largest, fabs(v[i]));
	}
	/* The draws fill the range, not a corner of it. */
	assert_true(largest > 0.5 * bound);
}

static void test_init_values(void **state)
{
	static const int widths[] = { 16, 64 };

	(void)state;
	for (int wi = 0; wi < 2; wi++) {
		struct nn_config cfg;
		struct nn_layout l;
		struct test_tensor tensors[TEST_MAX_TENSORS];
		float *params;
		size_t nf, used = 0;
		double pw_bound, b_bound;
		int ntensors;

		nn_config_defaults(&cfg, 1);
		cfg.nf = widths[wi];
		cfg.seed = 1;
		nf = (size_t)cfg.nf;
		/* A float draw may round onto the bound itself. */
		pw_bound = sqrt(6.0 / nf) / cfg.w0 * (1 + 1e-6);
		b_bound = 1 / sqrt((double)nf) * (1 + 1e-6);
		nn_layout_init(&l, &cfg);
		params = malloc(l.total * sizeof(float));
		assert_non_null(params);
		nn_init_params(&cfg, &l, params);

		check_bounded(params + l.first_w, 2 * nf, 0.5, "first_w");
		check_bounded(params + l.first_b, nf,
			      1 / sqrt(2.0) * (1 + 1e-6), "first_b");
		for (int k = 0; k < l.nblocks; k++) {
			for (size_t i = 0; i < 9 * nf; i++)
				assert_true(params[l.dw[k] + i] ==
					    (i % 9 == 4 ? 1.0f : 0.0f));
			check_bounded(params + l.pw_w[k], nf * nf, pw_bound,
				      "pw_w");
			check_bounded(params + l.pw_b[k], nf, b_bound, "pw_b");
		}
		check_bounded(params + l.out_w, 3 * nf, pw_bound, "out_w");
		for (int o = 0; o < 3; o++)
			assert_true(params[l.out_b + o] == 0.0f);

		/* Tensors are aligned, in order, and the padding is zero. */
		ntensors = test_layout_tensors(&l, tensors);
		for (int ti = 0; ti < ntensors; ti++) {
			assert_true(tensors[ti].offset % NN_ALIGN == 0);
			assert_true(tensors[ti].offset >= used);
			for (size_t i = used; i < tensors[ti].offset; i++)
				assert_true(params[i] == 0.0f);
			used = tensors[ti].offset + tensors[ti].count;
		}
		assert_true(used <= l.total && l.total % NN_ALIGN == 0);
		for (size_t i = used; i < l.total; i++)
			assert_true(params[i] == 0.0f);
		free(params);
	}
}

/* The defaults that wait for the width: the rate and the warmup, filled in
 * only where they are still automatic. */
static void test_width_defaults(void **state)
{
	struct nn_config cfg;

	(void)state;
	nn_config_defaults(&cfg, 0);
	assert_true(cfg.lr == NN_LR_AUTO);
	assert_int_equal(cfg.recipe.warmup, NN_WARMUP_AUTO);
	cfg.nf = 16;
	nn_resolve_auto(&cfg.nf, 0, &cfg.lr, &cfg.recipe);
	assert_true(cfg.lr == 6e-3);
	assert_int_equal(cfg.recipe.warmup, 50);
	nn_config_defaults(&cfg, 0);
	cfg.nf = 0; /* auto: the device's width, 512 on a GPU */
	nn_resolve_auto(&cfg.nf, 0, &cfg.lr, &cfg.recipe);
	assert_int_equal(cfg.nf, 512);
	assert_true(fabs(cfg.lr - 7.5e-4) < 1e-15);
	assert_int_equal(cfg.recipe.warmup, 10);
	/* the measured rates, log-log between them, 1/width past 512 */
	assert_true(fabs(nn_default_lr(32) - 6e-3) < 1e-15);
	assert_true(fabs(nn_default_lr(64) - 6e-3 * sqrt(0.5)) < 1e-15);
	assert_true(fabs(nn_default_lr(128) - 3e-3) < 1e-15);
	assert_true(fabs(nn_default_lr(256) - 1.5 * 3e-3 * sqrt(1.0 / 8)) <
		    1e-15);
	assert_true(nn_default_lr(96) < nn_default_lr(64) &&
		    nn_default_lr(96) > 3e-3);
	assert_true(fabs(nn_default_lr(1024) - 3.75e-4) < 1e-15);
	for (int w = 16; w < 1024; w += 16)
		assert_true(nn_default_lr(w + 16) <= nn_default_lr(w) &&
			    nn_default_lr(w) > 0);
	/* a value given is kept */
	cfg.lr = 1e-3;
	cfg.recipe.warmup = 3;
	cfg.nf = 16;
	nn_resolve_auto(&cfg.nf, 1, &cfg.lr, &cfg.recipe);
	assert_int_equal(cfg.nf, 16);
	assert_true(cfg.lr == 1e-3);
	assert_int_equal(cfg.recipe.warmup, 3);
	/* an automatic warmup passes the checks; other negatives do not */
	char err[256];
	nn_config_defaults(&cfg, 0);
	assert_int_equal(nn_config_check(&cfg, err, sizeof(err)), 0);
	cfg.recipe.warmup = -2;
	assert_int_not_equal(nn_config_check(&cfg, err, sizeof(err)), 0);
}

static void test_lr_constant(void **state)
{
	struct nn_config cfg;

	(void)state;
	nn_config_defaults(&cfg, 1);
	cfg.recipe.schedule = NN_SCHEDULE_CONSTANT;
	cfg.lr = 3e-4;
	assert_true(nn_lr_at(&cfg, 1) == 3e-4);
	assert_true(nn_lr_at(&cfg, cfg.recipe.warmup) == 3e-4);
	assert_true(nn_lr_at(&cfg, cfg.epochs) == 3e-4);
	assert_true(nn_lr_at(&cfg, 5 * cfg.epochs) == 3e-4);
}

static void test_lr_cosine(void **state)
{
	struct nn_config cfg;
	double floor, previous;

	(void)state;
	nn_config_defaults(&cfg, 1);
	assert_int_equal(cfg.recipe.schedule, NN_SCHEDULE_COSINE);
	cfg.lr = 1e-3;
	cfg.recipe.lr_min_ratio = 0.1;
	cfg.recipe.warmup = 50;
	cfg.epochs = 1000;
	floor = cfg.lr * cfg.recipe.lr_min_ratio;

	/* Warmup: strictly increasing, from near 0 to about lr. */
	assert_true(nn_lr_at(&cfg, 1) > 0 && nn_lr_at(&cfg, 1) < 0.05 * cfg.lr);
	for (int e = 2; e <= cfg.recipe.warmup; e++)
		assert_true(nn_lr_at(&cfg, e) > nn_lr_at(&cfg, e - 1));
	assert_true(fabs(nn_lr_at(&cfg, cfg.recipe.warmup) - cfg.lr) <=
		    cfg.lr / (cfg.recipe.warmup + 1.0) + 1e-15);
	assert_true(fabs(nn_lr_at(&cfg, cfg.recipe.warmup + 1) - cfg.lr) <=
		    0.01 * cfg.lr);

	/* Decay: never increasing, never above lr, never below the floor. */
	previous = nn_lr_at(&cfg, cfg.recipe.warmup + 1);
	for (int e = cfg.recipe.warmup + 2; e <= 3 * cfg.epochs; e++) {
		double lr = nn_lr_at(&cfg, e);
		assert_true(lr <= previous + 1e-18);
		assert_true(lr <= cfg.lr && lr >= floor - 1e-18);
		previous = lr;
	}
	assert_true(fabs(nn_lr_at(&cfg, cfg.epochs) - floor) < 1e-12 * cfg.lr);
	assert_true(fabs(nn_lr_at(&cfg, 2 * cfg.epochs) - floor) <
		    1e-12 * cfg.lr);

	/* An extended job continues its decay past the old end: no
	 * re-warming once the warmup is behind it. */
	cfg.epochs = 2000;
	for (int e = 1001; e <= 1100; e++)
		assert_true(nn_lr_at(&cfg, e) < nn_lr_at(&cfg, e - 1) ||
			    e == 1001);
	assert_true(nn_lr_at(&cfg, 1001) > floor &&
		    nn_lr_at(&cfg, 1001) < cfg.lr);
}

/* recipe.decay: a job longer than it trains as a job of that length to
 * the floor, then its rate falls on, by the same shape, to a tenth of the
 * floor at its end; a job no longer than it decays over the whole job. */
static void test_lr_decay(void **state)
{
	struct nn_config short_job, long_job;

	(void)state;
	nn_config_defaults(&short_job, 1);
	short_job.lr = 1e-3;
	short_job.recipe.warmup = 10;
	short_job.recipe.early_cycle = 0;
	short_job.recipe.decay = 2000;
	short_job.epochs = 2000;
	long_job = short_job;
	long_job.epochs = 6000;
	double floor = short_job.lr * short_job.recipe.lr_min_ratio;
	for (int e = 1; e <= 2000; e++)
		assert_true(nn_lr_at(&long_job, e) == nn_lr_at(&short_job, e));
	assert_true(fabs(nn_lr_at(&long_job, 2000) - floor) < 1e-12);
	for (int e = 2001; e <= 6000; e++) {
		assert_true(nn_lr_at(&long_job, e) <
			    nn_lr_at(&long_job, e - 1));
		assert_true(nn_lr_at(&long_job, e) >= 0.1 * floor - 1e-18);
	}
	assert_true(fabs(nn_lr_at(&long_job, 6000) - 0.1 * floor) < 1e-12);
	assert_true(fabs(nn_lr_at(&long_job, 9000) - 0.1 * floor) < 1e-12);
	/* 0: the decay spans the job, as before the key */
	long_job.recipe.decay = 0;
	assert_true(nn_lr_at(&long_job, 2000) > 0.7 * long_job.lr);
	assert_true(fabs(nn_lr_at(&long_job, 6000) - floor) < 1e-12);
	/* with the early cycle, the main decay counts from the cycle's end */
	long_job.recipe.early_cycle = 400;
	long_job.recipe.decay = 2000;
	assert_true(fabs(nn_lr_at(&long_job, 400) - floor) < 1e-12);
	assert_true(fabs(nn_lr_at(&long_job, 2400) - floor) < 1e-12);
	assert_true(nn_lr_at(&long_job, 2399) > floor);
	assert_true(nn_lr_at(&long_job, 2401) < floor);
}

/* Warmup, then the plateau at the peak, then a straight line to the floor
 * at the last epoch; by absolute epoch, so a resume never warms up. */
static void test_lr_plateau_linear(void **state)
{
	struct nn_config cfg;

	(void)state;
	nn_config_defaults(&cfg, 1);
	cfg.lr = 1e-2;
	cfg.epochs = 100;
	cfg.recipe.schedule = NN_SCHEDULE_LINEAR;
	cfg.recipe.warmup = 10;
	cfg.recipe.plateau = 20;
	cfg.recipe.lr_min_ratio = 0.5;
	assert_true(fabs(nn_lr_at(&cfg, 5) - 5e-3) < 1e-15);
	for (int e = 10; e <= 30; e++)
		assert_true(nn_lr_at(&cfg, e) == cfg.lr);
	assert_true(fabs(nn_lr_at(&cfg, 65) - 7.5e-3) < 1e-15);
	assert_true(fabs(nn_lr_at(&cfg, 100) - 5e-3) < 1e-15);
	assert_true(fabs(nn_lr_at(&cfg, 150) - 5e-3) < 1e-15);
}

/* exp: warmup, plateau, then the rate above the floor halves every
 * half_life epochs, whatever the job's total (a longer job has the same
 * rate at the same epoch). */
static void test_lr_exp(void **state)
{
	struct nn_config cfg;

	(void)state;
	nn_config_defaults(&cfg, 1);
	cfg.lr = 1e-2;
	cfg.epochs = 100;
	cfg.recipe.schedule = NN_SCHEDULE_EXP;
	cfg.recipe.warmup = 10;
	cfg.recipe.plateau = 5;
	cfg.recipe.half_life = 40;
	cfg.recipe.lr_min_ratio = 0.2;
	assert_true(fabs(nn_lr_at(&cfg, 5) - 5e-3) < 1e-15);
	assert_true(nn_lr_at(&cfg, 15) == cfg.lr);
	assert_true(fabs(nn_lr_at(&cfg, 55) - 6e-3) < 1e-15);
	assert_true(fabs(nn_lr_at(&cfg, 95) - 4e-3) < 1e-15);
	double at95 = nn_lr_at(&cfg, 95);
	cfg.epochs = 6000;
	assert_true(nn_lr_at(&cfg, 95) == at95);
	assert_true(fabs(nn_lr_at(&cfg, 5000) - 2e-3) < 1e-12);
	cfg.recipe.half_life = 0;
	char err[128];
	assert_int_equal(nn_config_check(&cfg, err, sizeof(err)), ERR_INVALID);
}

/* The early cycle: a cosine to the floor by epoch early_cycle, the warmup
 * again from that floor, then the main cosine to the job's end; taken by
 * cosine and linear jobs at least NN_EARLY_CYCLE_RATIO times as long. */
static void test_lr_early_cycle(void **state)
{
	struct nn_config cfg;

	(void)state;
	nn_config_defaults(&cfg, 1);
	cfg.lr = 1e-2;
	cfg.recipe.schedule = NN_SCHEDULE_COSINE;
	cfg.recipe.warmup = 10;
	cfg.recipe.plateau = 0;
	cfg.recipe.lr_min_ratio = 0.1;
	cfg.recipe.early_cycle = 110;
	cfg.epochs = 1000;
	assert_int_equal(nn_early_cycle(&cfg), 110);
	assert_true(fabs(nn_lr_at(&cfg, 5) - 5e-3) < 1e-15);
	assert_true(nn_lr_at(&cfg, 10) == cfg.lr);
	/* halfway down the first cosine, then its floor */
	assert_true(fabs(nn_lr_at(&cfg, 60) - 5.5e-3) < 1e-15);
	assert_true(fabs(nn_lr_at(&cfg, 110) - 1e-3) < 1e-15);
	/* the warmup again, from the floor */
	assert_true(fabs(nn_lr_at(&cfg, 115) - 5.5e-3) < 1e-15);
	assert_true(fabs(nn_lr_at(&cfg, 120) - cfg.lr) < 1e-15);
	/* the main cosine, from epoch 120 to 1000 */
	assert_true(fabs(nn_lr_at(&cfg, 560) - 5.5e-3) < 1e-15);
	assert_true(fabs(nn_lr_at(&cfg, 1000) - 1e-3) < 1e-15);
	/* too short a job, or exp or constant: no early cycle */
	cfg.epochs = 800;
	assert_int_equal(nn_early_cycle(&cfg), 0);
	assert_true(fabs(nn_lr_at(&cfg, 405) - 5.5e-3) < 1e-15);
	cfg.epochs = 1000;
	cfg.recipe.schedule = NN_SCHEDULE_EXP;
	assert_int_equal(nn_early_cycle(&cfg), 0);
	cfg.recipe.schedule = NN_SCHEDULE_COSINE;
	cfg.recipe.early_cycle = 0;
	assert_int_equal(nn_early_cycle(&cfg), 0);
	assert_true(fabs(nn_lr_at(&cfg, 505) - 5.5e-3) < 1e-15);
}

/* Every recipe key reads back what was set, and bad values are refused
 * with a sentence that names the key. */
static void test_recipe_keys_round_trip(void **state)
{
	static const char *const values[][2] = {
		{ "optimizer", "muon" },  { "schedule", "linear" },
		{ "warmup", "7" },        { "plateau", "9" },
		{ "lr_min", "0.25" },     { "half_life", "300" },
		{ "early_cycle", "250" }, { "schedule", "exp" },
		{ "average", "ema" },     { "ema_decay", "0.995" },
		{ "ssim", "0.25" },       { "grad", "0.5" },
		{ "chroma", "2" }
	};
	struct nn_recipe r = { 0 };
	char buf[64], err[128];

	(void)state;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		assert_int_equal(nn_recipe_set(&r, values[i][0], values[i][1],
					       err, sizeof(err)),
				 0);
		nn_recipe_get(&r, values[i][0], buf, sizeof(buf));
		assert_string_equal(buf, values[i][1]);
	}
	assert_int_equal(nn_recipe_set(&r, "lr-min", "0.5", err, sizeof(err)),
			 0);
	assert_true(r.lr_min_ratio == 0.5);
	assert_int_equal(
	    nn_recipe_set(&r, "optimizer", "sgd", err, sizeof(err)),
	    ERR_INVALID);
	assert_non_null(strstr(err, "optimizer"));
	assert_int_equal(nn_recipe_set(&r, "momentum", "1", err, sizeof(err)),
			 ERR_INVALID);
	/* -1 is the warmup by width, as a job's saved recipe keeps it
	 * (job.submit refuses it: proto/params.h) */
	assert_int_equal(nn_recipe_set(&r, "warmup", "-1", err, sizeof(err)),
			 0);
	assert_int_equal(r.warmup, NN_WARMUP_AUTO);
	assert_int_equal(nn_recipe_set(&r, "warmup", "-2", err, sizeof(err)),
			 ERR_INVALID);
}

/* Small images take a smaller rate above width 16: the square root of
 * their share of NN_LR_FULL_PIXELS, never under NN_LR_LEAST_SCALE, 1 from
 * there up. */
static void test_lr_pixel_scale(void **state)
{
	(void)state;
	assert_true(nn_lr_pixel_scale(32, NN_LR_FULL_PIXELS) == 1);
	assert_true(nn_lr_pixel_scale(32, 512 * 512) == 1);
	assert_true(fabs(nn_lr_pixel_scale(32, NN_LR_FULL_PIXELS / 4) - 0.5) <
		    1e-15);
	assert_true(nn_lr_pixel_scale(32, 16 * 10) == NN_LR_LEAST_SCALE);
	assert_true(nn_lr_pixel_scale(32, 1) == NN_LR_LEAST_SCALE);
	assert_true(fabs(nn_lr_pixel_scale(32, 720) - sqrt(0.5)) < 1e-15);
	for (int64_t p = 2; p <= 2 * NN_LR_FULL_PIXELS; p++)
		assert_true(nn_lr_pixel_scale(32, p) >=
			    nn_lr_pixel_scale(32, p - 1));
	assert_true(nn_lr_pixel_scale(16, 16 * 10) == 1);
	assert_true(nn_lr_pixel_scale(64, 16 * 10) == NN_LR_LEAST_SCALE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_reproducible),
		cmocka_unit_test(test_rng_known_answers),
		cmocka_unit_test(test_init_values),
		cmocka_unit_test(test_width_defaults),
		cmocka_unit_test(test_lr_constant),
		cmocka_unit_test(test_lr_cosine),
		cmocka_unit_test(test_lr_plateau_linear),
		cmocka_unit_test(test_lr_decay),
		cmocka_unit_test(test_lr_exp),
		cmocka_unit_test(test_lr_early_cycle),
		cmocka_unit_test(test_lr_pixel_scale),
		cmocka_unit_test(test_recipe_keys_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
