/*
 * mksample.c - writes the synthetic sample photograph that the demo and
 * the benchmark fit.
 *
 *     mksample OUT.png WIDTH HEIGHT [SEED]
 *
 * The picture is a small landscape, built so that a fit has something of
 * everything to learn: a smooth sky gradient with a soft sun and clouds,
 * two ranges of hills with textured slopes, a ploughed field whose rows
 * converge on the horizon (stripes whose frequency rises towards it), a
 * banner with chirped stripes, a few soft-edged, shaded balloons, a
 * vignette and a little film grain. Every parameter is drawn from the seed
 * with SplitMix64 and the noise is hashed from the seed, so the same
 * arguments give the same image on every machine; sizes are in units of
 * the image height, so a larger image shows the same scene in more detail.
 * It writes through png_save_file (atomic, 8-bit RGB).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "formats/image_codec.h"

/* ==== Deterministic randomness ========================================= */

static uint64_t splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A uniform draw in [lo, hi). */
static double uniform(uint64_t *state, double lo, double hi)
{
	return lo + (hi - lo) * (double)(splitmix(state) >> 11) * 0x1p-53;
}

/* A hash of a lattice point, in [0, 1). */
static double lattice(int64_t ix, int64_t iy, uint64_t seed)
{
	uint64_t s = seed ^ (uint64_t)ix * 0x9e3779b97f4a7c15ull ^
		     (uint64_t)iy * 0xc2b2ae3d27d4eb4full;

	return (double)(splitmix(&s) >> 11) * 0x1p-53;
}

static double fade(double t) { return t * t * t * (t * (t * 6 - 15) + 10); }

/* Value noise in [0, 1), smooth between lattice points. */
static double noise(double x, double y, uint64_t seed)
{
	double fx = floor(x), fy = floor(y), tx = fade(x - fx),
	       ty = fade(y - fy);
	int64_t ix = (int64_t)fx, iy = (int64_t)fy;
	double a = lattice(ix, iy, seed), b = lattice(ix + 1, iy, seed);
	double c = lattice(ix, iy + 1, seed), d = lattice(ix + 1, iy + 1, seed);

	return (a + (b - a) * tx) * (1 - ty) + (c + (d - c) * tx) * ty;
}

/* Fractal noise: octaves of value noise, halving in amplitude. */
static double fbm(double x, double y, int octaves, uint64_t seed)
{
	double sum = 0, amp = 1, norm = 0;

	for (int k = 0; k < octaves; k++) {
		sum += amp * noise(x, y, seed + (uint64_t)k * 7919);
		norm += amp;
		amp *= 0.5;
		x = x * 2.03 + 17.1;
		y = y * 2.03 - 9.7;
	}
	return sum / norm;
}

/* ==== Shapes =========================================================== */

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

static double smoothstep(double e0, double e1, double x)
{
	double t = clamp01((x - e0) / (e1 - e0));

	return t * t * (3 - 2 * t);
}

static void mix3(double *c, const double *to, double t)
{
	for (int k = 0; k < 3; k++)
		c[k] += (to[k] - c[k]) * t;
}

struct balloon {
	double u, v, r; /* centre and radius, in image heights */
	double rgb[3];
};

struct scene {
	uint64_t seed;
	double aspect, px; /* width / height; one pixel */
	double horizon;
	double sun_u, sun_v, sun_r;
	double vanish_u; /* the field rows' vanishing point */
	double field_top;
	double banner_u, banner_v, banner_w, banner_h, banner_tilt;
	struct balloon balloons[6];
	int nballoons;
};

static void draw_scene(struct scene *s, uint64_t *rng, int width, int height)
{
	s->aspect = (double)width / height;
	s->px = 1.0 / height;
	s->horizon = uniform(rng, 0.42, 0.55);
	s->sun_u = uniform(rng, 0.15, 0.85) * s->aspect;
	s->sun_v = uniform(rng, 0.12, 0.3);
	s->sun_r = uniform(rng, 0.035, 0.06);
	s->vanish_u = uniform(rng, 0.3, 0.7) * s->aspect;
	s->field_top = s->horizon + uniform(rng, 0.14, 0.2);
	s->banner_w = uniform(rng, 0.22, 0.32);
	s->banner_h = uniform(rng, 0.08, 0.12);
	s->banner_u = uniform(rng, 0.1, 0.9) * s->aspect - s->banner_w / 2;
	s->banner_v = s->horizon + uniform(rng, -0.02, 0.06);
	s->banner_tilt = uniform(rng, -0.15, 0.15);
	s->nballoons = 3 + (int)(splitmix(rng) % 4);
	for (int i = 0; i < s->nballoons; i++) {
		struct balloon *b = &s->balloons[i];
		double hue = uniform(rng, 0, 6);

		b->u = uniform(rng, 0.05, 0.95) * s->aspect;
		b->v = uniform(rng, 0.1, 0.75);
		b->r = uniform(rng, 0.025, 0.09);
		/* A saturated colour from the hue. */
		for (int k = 0; k < 3; k++) {
			double h = fmod(hue + 4 - 2 * k, 6);

			b->rgb[k] = 0.15 + 0.8 * clamp01(fabs(h - 3) - 1);
		}
	}
}

static void sky(const struct scene *s, double u, double v, double *c)
{
	static const double top[3] = { 0.16, 0.32, 0.66 };
	static const double low[3] = { 0.86, 0.80, 0.70 };
	static const double warm[3] = { 1.0, 0.86, 0.6 };
	static const double cloud[3] = { 0.96, 0.95, 0.97 };
	double t = clamp01(v / s->horizon), d, glow, cover, shade;

	c[0] = top[0], c[1] = top[1], c[2] = top[2];
	mix3(c, low, pow(t, 1.6));
	d = hypot(u - s->sun_u, v - s->sun_v);
	glow = exp(-d * d / (0.06 * 0.06));
	mix3(c, warm, 0.55 * glow);
	mix3(c, (const double[3]){ 1.0, 0.98, 0.9 },
	     1 - smoothstep(s->sun_r - 2 * s->px, s->sun_r + 2 * s->px, d));
	/* Clouds: stretched fractal noise, thinning towards the horizon. */
	cover = fbm(u * 2.5, v * 7.0, 6, s->seed + 11);
	cover = smoothstep(0.5, 0.72, cover) * (1 - 0.6 * t);
	shade = 0.82 + 0.18 * fbm(u * 9, v * 20, 3, s->seed + 12);
	mix3(c,
	     (const double[3]){ cloud[0] * shade, cloud[1] * shade,
				cloud[2] * shade },
	     cover);
}

static void land(const struct scene *s, double u, double v, double *c)
{
	double far = s->horizon - 0.16 * fbm(u * 2.2, 0.5, 7, s->seed + 21);
	double field =
	    s->field_top + 0.03 * (fbm(u * 2.5, 7.5, 4, s->seed + 27) - 0.5);
	double near =
	    s->horizon + 0.04 - 0.11 * fbm(u * 1.4, 3.5, 5, s->seed + 22);
	double tex, edge;

	/* Far hills: hazy, blue-grey, softly textured. */
	edge = smoothstep(far - s->px, far + s->px, v);
	if (edge > 0) {
		double haze = clamp01((v - far) / 0.15);
		double col[3] = { 0.42, 0.48, 0.56 };

		tex = fbm(u * 12, v * 12, 4, s->seed + 23);
		for (int k = 0; k < 3; k++)
			col[k] =
			    col[k] * (0.85 + 0.3 * tex) * (0.8 + 0.2 * haze);
		mix3(c, col, edge);
	}
	/* Near hills: green slopes, darker low down, with grass texture. */
	edge = smoothstep(near - 1.5 * s->px, near + 1.5 * s->px, v);
	if (edge > 0) {
		double depth = clamp01((v - near) / 0.3);
		double col[3] = { 0.30, 0.48, 0.18 };

		tex = fbm(u * 30, v * 60, 5, s->seed + 24);
		for (int k = 0; k < 3; k++)
			col[k] *= (0.7 + 0.5 * tex) * (1 - 0.35 * depth);
		col[0] += 0.12 * fbm(u * 4, v * 4, 3, s->seed + 25);
		mix3(c, col, edge);
	}
	/* The field: rows converging on the vanishing point. */
	edge = smoothstep(field - s->px, field + s->px, v);
	if (edge > 0) {
		double a = (u - s->vanish_u) / (v - s->horizon);
		double row = 0.5 + 0.5 * sin(a * 60.0);
		/* Fade the rows out where they get finer than the pixels. */
		double fine = clamp01((v - field) / 0.05);
		double soil[3] = { 0.45, 0.32, 0.20 },
		       crop[3] = { 0.55, 0.62, 0.25 };

		tex = fbm(u * 80, v * 80, 3, s->seed + 26);
		mix3(soil, crop, row * (0.3 + 0.7 * fine));
		for (int k = 0; k < 3; k++)
			soil[k] *= 0.8 + 0.4 * tex;
		mix3(c, soil, edge);
	}
}

/* A banner with stripes whose frequency rises along it (a chirp). */
static void banner(const struct scene *s, double u, double v, double *c)
{
	double x = u - s->banner_u, y = v - s->banner_v;
	double along = x, across = y - s->banner_tilt * x;
	double inside, t, stripe;

	inside = smoothstep(-s->px, s->px, along) *
		 smoothstep(-s->px, s->px, s->banner_w - along) *
		 smoothstep(-s->px, s->px, across) *
		 smoothstep(-s->px, s->px, s->banner_h - across);
	if (inside <= 0)
		return;
	t = along / s->banner_w;
	stripe = 0.5 + 0.5 * sin(2 * M_PI * (6 * t + 14 * t * t));
	{
		double a[3] = { 0.85, 0.15, 0.12 }, b[3] = { 0.95, 0.92, 0.85 };
		double wave =
		    0.85 + 0.15 * sin(across / s->banner_h * 3 + t * 9);

		mix3(a, b, smoothstep(0.35, 0.65, stripe));
		for (int k = 0; k < 3; k++)
			a[k] *= wave;
		mix3(c, a, inside);
	}
}

/* Shaded, soft-edged balloons: light from the upper left. */
static void balloons(const struct scene *s, double u, double v, double *c)
{
	for (int i = 0; i < s->nballoons; i++) {
		const struct balloon *b = &s->balloons[i];
		double dx = (u - b->u) / b->r, dy = (v - b->v) / b->r;
		double d = sqrt(dx * dx + dy * dy), cover, light, col[3];

		if (d > 1.2)
			continue;
		cover = 1 - smoothstep(1 - 2.5 * s->px / b->r,
				       1 + 2.5 * s->px / b->r, d);
		light = clamp01(0.55 + 0.45 * (-dx * 0.6 - dy * 0.7) /
					   (d > 1 ? d : 1));
		for (int k = 0; k < 3; k++)
			col[k] = b->rgb[k] * (0.45 + 0.7 * light);
		/* A highlight. */
		mix3(col, (const double[3]){ 1, 1, 1 },
		     0.6 * exp(-((dx + 0.35) * (dx + 0.35) +
				 (dy + 0.4) * (dy + 0.4)) /
			       0.03));
		mix3(c, col, 0.92 * cover);
	}
}

static void pixel(const struct scene *s, int x, int y, int height, float *out)
{
	double u = (x + 0.5) / height, v = (y + 0.5) / height, c[3];
	double cu = u / s->aspect - 0.5, cv = v - 0.5, vignette, grain;
	uint64_t g = s->seed ^ ((uint64_t)y << 32 | (uint32_t)x);

	sky(s, u, v, c);
	land(s, u, v, c);
	banner(s, u, v, c);
	balloons(s, u, v, c);
	vignette = 1 - 0.35 * (cu * cu + cv * cv);
	grain = ((double)(splitmix(&g) >> 11) * 0x1p-53 - 0.5) * 0.025;
	for (int k = 0; k < 3; k++)
		out[k] = (float)clamp01(c[k] * vignette + grain);
}

/* ==== Main ============================================================= */

static int parse_int(const char *text, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	long width, height, seed = 1;
	struct image *img;
	struct scene scene;
	uint64_t rng;
	int rc;

	if (argc < 4 || argc > 5 ||
	    parse_int(argv[2], 1, IMAGE_MAX_SIDE, &width) ||
	    parse_int(argv[3], 1, IMAGE_MAX_SIDE, &height) ||
	    (argc == 5 && parse_int(argv[4], 0, INT32_MAX, &seed)) ||
	    (uint64_t)width * (uint64_t)height > IMAGE_MAX_PIXELS) {
		fprintf(stderr,
			"usage: mksample OUT.png WIDTH HEIGHT [SEED]\n"
			"  WIDTH and HEIGHT from 1 to %d (at most %u pixels),"
			" SEED a non-negative integer\n",
			IMAGE_MAX_SIDE, IMAGE_MAX_PIXELS);
		return 2;
	}
	img = image_create((int)width, (int)height);
	if (!img) {
		fprintf(stderr, "mksample: out of memory\n");
		return 1;
	}
	rng = (uint64_t)seed * 0x2545f4914f6cdd1dull + 1;
	memset(&scene, 0, sizeof(scene));
	scene.seed = splitmix(&rng);
	draw_scene(&scene, &rng, (int)width, (int)height);
	for (int y = 0; y < height; y++)
		for (int x = 0; x < width; x++)
			pixel(&scene, x, y, (int)height,
			      img->rgb + ((size_t)y * width + x) * 3);
	rc = png_save_file(img, argv[1]);
	image_destroy(img);
	if (rc) {
		fprintf(stderr, "mksample: cannot write %s: %s\n", argv[1],
			rc == ERR_IO || rc == ERR_NO_SPACE ? strerror(errno)
							   : error_message(rc));
		return 1;
	}
	return 0;
}
