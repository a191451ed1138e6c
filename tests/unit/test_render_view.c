/*
 * test_render_view.c - renders at any size (nn_render_view) on the Vulkan
 * device: scale 1 bit for bit as nn_render, in one tile or many; at scale
 * 3 the fine pixels at the trained pixels' centres equal the scale-1
 * render; tiles, bands and crops change nothing; a size that is not an
 * integer scale is the box filter of the next integer scale; a package
 * whose stored size was edited is refused.
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
#include "nn/package.h"
#include "nn/render_view.h"
#include "unit/support_gpu.h"

#define W 24
#define H 20

/* A package of width 16 and nblocks blocks (dilations 1, 2, 4, 8 as
 * many as that) with random depthwise taps, so that the off-centre taps,
 * whose reach the scale multiplies, matter. The tiling checks take one
 * block: with a halo larger than the image every tile would be all of it. */
static struct st_file *package(int nblocks)
{
	struct nn_config cfg;
	nn_config_defaults(&cfg, 1);
	cfg.precision = NN_PRECISION_FP32;
	cfg.nf = 16;
	cfg.seed = 7;
	cfg.epochs = 1;
	cfg.nblocks = nblocks;
	struct nn_layout l;
	nn_layout_init(&l, &cfg);
	float *p = calloc(l.total, sizeof(float));
	nn_init_params(&cfg, &l, p);
	for (int k = 0; k < cfg.nblocks; k++)
		test_random(p + l.dw[k], (size_t)cfg.nf * 9, 300 + k, -0.5f,
			    0.5f);
	test_random(p + l.out_w, 3 * (size_t)cfg.nf, 9, -0.3f, 0.3f);
	struct nn_fit *fit;
	char err[256];
	struct image *img = test_image(W, H, 1);
	assert_int_equal(nn_fit_create_sized(&fit, test_gpu, W, H, img, &cfg, p,
					     err, sizeof(err)),
			 0);
	struct st_file *pkg;
	assert_int_equal(nn_fit_export(fit, &pkg, NULL, NULL), 0);
	nn_fit_destroy(fit);
	image_destroy(img);
	free(p);
	return pkg;
}

static struct image *render(const struct st_file *pkg, struct nn_view v,
			    struct nn_view_info *info)
{
	struct image *out = NULL;
	char err[512];
	int rc =
	    nn_render_view(test_gpu, pkg, &v, &out, info, err, sizeof(err));
	if (rc)
		print_message("nn_render_view: %s\n", err);
	assert_int_equal(rc, 0);
	return out;
}

static double max_diff(const float *a, const float *b, size_t n)
{
	double worst = 0;
	for (size_t i = 0; i < n; i++)
		if (fabs(a[i] - b[i]) > worst)
			worst = fabs(a[i] - b[i]);
	return worst;
}

static void test_scale_one_is_the_render(void **state)
{
	(void)state;
	test_need_gpu();
	struct st_file *pkg = package(4);
	struct image *today, *one, *tiled;
	char err[256];
	double psnr;
	assert_int_equal(
	    nn_render(test_gpu, pkg, NULL, &today, &psnr, err, sizeof(err)), 0);
	struct nn_view_info info;
	one = render(pkg, (struct nn_view){ .scale = 1 }, &info);
	assert_int_equal(info.tiles, 1);
	assert_int_equal(one->width, W);
	assert_memory_equal(one->rgb, today->rgb, W * H * 3 * sizeof(float));
	/* a budget that takes tiles of a few pixels and bands of a few rows:
	 * the same bits (each pixel computed in the same order) */
	struct st_file *small = package(1);
	image_destroy(today);
	assert_int_equal(
	    nn_render(test_gpu, small, NULL, &today, &psnr, err, sizeof(err)),
	    0);
	tiled = render(
	    small, (struct nn_view){ .scale = 1, .mem_budget = 40000 }, &info);
	print_message("scale 1: %d tiles in %d bands\n", info.tiles,
		      info.bands);
	assert_true(info.tiles > 1 && info.bands > 1);
	assert_memory_equal(tiled->rgb, today->rgb, W * H * 3 * sizeof(float));
	st_destroy(small);
	image_destroy(today);
	image_destroy(one);
	image_destroy(tiled);
	st_destroy(pkg);
}

/*
 * At scale 3 the fine pixel (3x + 1, 3y + 1) has the coordinates of the
 * trained pixel (x, y) (the same quotient (2x + 1) / W, so the same float
 * when the division is correctly rounded), every tap lands on the fine
 * pixel at the trained tap's place, and the same arithmetic follows in the
 * same order: equal up to the rounding of that division (Vulkan allows 2.5
 * ulp), amplified by the sines' slopes (w0 = 30 a layer). 1e-5 on [0, 1]
 * is below an 8-bit step by 400 times; lavapipe gives 0.
 */
static void test_scale_three_keeps_the_centres(void **state)
{
	(void)state;
	test_need_gpu();
	struct st_file *pkg = package(4);
	struct image *one = render(pkg, (struct nn_view){ .scale = 1 }, NULL);
	struct nn_view_info info;
	struct image *three =
	    render(pkg, (struct nn_view){ .scale = 3 }, &info);
	assert_int_equal(three->width, 3 * W);
	assert_int_equal(three->height, 3 * H);
	assert_int_equal(info.exact, 1);
	double worst = 0, between = 0;
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			for (int c = 0; c < 3; c++) {
				float a = one->rgb[(y * W + x) * 3 + c];
				float b = three->rgb[((3 * y + 1) * 3 * W +
						      3 * x + 1) *
							 3 +
						     c];
				float n =
				    three->rgb[((3 * y) * 3 * W + 3 * x) * 3 +
					       c];
				worst =
				    fabs(a - b) > worst ? fabs(a - b) : worst;
				between += fabs(a - n);
			}
	print_message("scale 3: centres within %.3g of scale 1; other fine "
		      "pixels differ by %.3g on average\n",
		      worst, between / (W * H * 3));
	assert_true(worst <= 1e-5);
	assert_true(between / (W * H * 3) > 1e-3); /* new pixels, not copies */

	/* tiles and bands change nothing, nor does a crop */
	struct st_file *small = package(1);
	struct image *whole =
	    render(small, (struct nn_view){ .scale = 3 }, NULL);
	struct image *tiled = render(
	    small, (struct nn_view){ .scale = 3, .mem_budget = 150000 }, &info);
	print_message("scale 3: %d tiles in %d bands\n", info.tiles,
		      info.bands);
	assert_true(info.tiles > 1 && info.bands > 1);
	assert_memory_equal(tiled->rgb, whole->rgb,
			    9 * W * H * 3 * sizeof(float));
	image_destroy(whole);
	st_destroy(small);
	struct image *crop = render(pkg,
				    (struct nn_view){ .scale = 3,
						      .crop_x = 10,
						      .crop_y = 7,
						      .crop_w = 31,
						      .crop_h = 17 },
				    NULL);
	assert_int_equal(crop->width, 31);
	for (int y = 0; y < 17; y++)
		assert_memory_equal(crop->rgb + y * 31 * 3,
				    three->rgb + ((7 + y) * 3 * W + 10) * 3,
				    31 * 3 * sizeof(float));
	image_destroy(one);
	image_destroy(three);
	image_destroy(tiled);
	image_destroy(crop);
	st_destroy(pkg);
}

/* The box filter of fine (fw x fh) to ow x oh, on the host: the largest
 * difference from out. */
static double box_diff(const struct image *fine, const struct image *out)
{
	int fw = fine->width, fh = fine->height, ow = out->width,
	    oh = out->height;
	double worst = 0;
	for (int oy = 0; oy < oh; oy++)
		for (int ox = 0; ox < ow; ox++) {
			double x0 = ox * (double)fw / ow,
			       x1 = (ox + 1) * (double)fw / ow;
			double y0 = oy * (double)fh / oh,
			       y1 = (oy + 1) * (double)fh / oh;
			double sum[3] = { 0 }, area = 0;
			for (int fy = (int)y0; fy < (int)ceil(y1); fy++)
				for (int fx = (int)x0; fx < (int)ceil(x1);
				     fx++) {
					double w =
					    (fmin(y1, fy + 1) - fmax(y0, fy)) *
					    (fmin(x1, fx + 1) - fmax(x0, fx));
					for (int c = 0; c < 3; c++)
						sum[c] +=
						    w *
						    fine->rgb[(fy * fw + fx) *
								  3 +
							      c];
					area += w;
				}
			for (int c = 0; c < 3; c++) {
				double d =
				    fabs(sum[c] / area -
					 out->rgb[(oy * ow + ox) * 3 + c]);
				worst = d > worst ? d : worst;
			}
		}
	return worst;
}

/* 50x30 from 24x20: the scale 3 render (the next integer for the width)
 * box-filtered, as on the host; 10x7: the scale 1 render so (a
 * thumbnail). */
static void test_other_sizes_are_box_filtered(void **state)
{
	(void)state;
	test_need_gpu();
	struct st_file *pkg = package(4);
	struct nn_view_info info;
	struct image *fine = render(pkg, (struct nn_view){ .scale = 3 }, NULL);
	struct image *out =
	    render(pkg, (struct nn_view){ .width = 50, .height = 30 }, &info);
	assert_int_equal(info.scale, 3);
	assert_int_equal(info.exact, 0);
	assert_int_equal(out->width, 50);
	assert_int_equal(out->height, 30);
	double worst = box_diff(fine, out);
	struct image *one = render(pkg, (struct nn_view){ .scale = 1 }, NULL);
	struct image *thumb =
	    render(pkg, (struct nn_view){ .width = 10, .height = 7 }, &info);
	assert_int_equal(info.scale, 1);
	double thumb_worst = box_diff(one, thumb);
	print_message("10x7: within %.3g of the host's box filter\n",
		      thumb_worst);
	assert_true(thumb_worst < 1e-5);
	image_destroy(one);
	image_destroy(thumb);
	print_message("50x30: within %.3g of the host's box filter\n", worst);
	assert_true(worst < 1e-5);
	/* in bands and tiles, and a crop of it, the same */
	struct st_file *small = package(1);
	struct image *whole =
	    render(small, (struct nn_view){ .width = 50, .height = 30 }, NULL);
	struct image *tiled = render(
	    small,
	    (struct nn_view){ .width = 50, .height = 30, .mem_budget = 200000 },
	    &info);
	print_message("50x30: %d tiles in %d bands\n", info.tiles, info.bands);
	assert_true(info.tiles > 1 && info.bands > 1);
	assert_true(max_diff(tiled->rgb, whole->rgb, 50 * 30 * 3) == 0);
	struct image *crop = render(small,
				    (struct nn_view){ .width = 50,
						      .height = 30,
						      .crop_x = 7,
						      .crop_y = 5,
						      .crop_w = 20,
						      .crop_h = 11 },
				    NULL);
	for (int y = 0; y < 11; y++)
		assert_true(max_diff(crop->rgb + y * 20 * 3,
				     whole->rgb + ((5 + y) * 50 + 7) * 3,
				     20 * 3) == 0);
	image_destroy(crop);
	image_destroy(whole);
	st_destroy(small);
	image_destroy(fine);
	image_destroy(out);
	image_destroy(tiled);
	st_destroy(pkg);
}

static void test_edited_size_is_refused(void **state)
{
	(void)state;
	test_need_gpu();
	struct st_file *pkg = package(4);
	assert_non_null(st_get_meta(pkg, "size_check"));
	assert_int_equal(st_set_meta(pkg, "width", "30"), 0);
	struct image *out = NULL;
	char err[512];
	double psnr;
	struct nn_view v = { .scale = 2 };
	assert_int_equal(
	    nn_render_view(test_gpu, pkg, &v, &out, NULL, err, sizeof(err)),
	    ERR_FORMAT);
	assert_null(out);
	assert_non_null(strstr(err, "edited"));
	assert_int_equal(
	    nn_render(test_gpu, pkg, NULL, &out, &psnr, err, sizeof(err)),
	    ERR_FORMAT);
	assert_non_null(strstr(err, "size_check"));
	/* put back, it renders again */
	assert_int_equal(st_set_meta(pkg, "width", "24"), 0);
	out = render(pkg, v, NULL);
	image_destroy(out);
	/* a view outside the image, or over the limits, is refused */
	v = (struct nn_view){
		.scale = 1, .crop_x = 20, .crop_w = 5, .crop_h = 1
	};
	assert_int_equal(
	    nn_render_view(test_gpu, pkg, &v, &out, NULL, err, sizeof(err)),
	    ERR_INVALID);
	v = (struct nn_view){ .scale = NN_VIEW_MAX_SCALE + 1 };
	assert_int_equal(
	    nn_render_view(test_gpu, pkg, &v, &out, NULL, err, sizeof(err)),
	    ERR_INVALID);
	st_destroy(pkg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scale_one_is_the_render),
		cmocka_unit_test(test_scale_three_keeps_the_centres),
		cmocka_unit_test(test_other_sizes_are_box_filtered),
		cmocka_unit_test(test_edited_size_is_refused),
	};
	return cmocka_run_group_tests(tests, test_gpu_setup, test_gpu_teardown);
}
