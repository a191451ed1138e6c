/*
 * loss_ref.c - the plain-C, double-precision reference of the loss terms
 * besides the MSE (ssim, grad, chroma: struct nn_recipe in nn/model.h
 * defines them), which shaders/loss.comp computes on the device.
 *
 * Written from the definitions, one centre pixel of the core at a time:
 * the centre's terms, then their gradient by the chain rule through that
 * centre's own sums (SSIM's window means and moments), added into dY of
 * every pixel they read. Nothing is shared between centres, so each line
 * can be checked against model.h by eye; test_ref checks the gradient
 * against finite differences of the returned loss.
 */
#include "ref/ref.h"

#include <math.h>

struct loss_ctx {
	const struct ref_tile *t;
	const struct image *target;
	const double *y;
	double *dy;
	size_t n;
};

static int inside(const struct ref_tile *t, int x, int y)
{
	return x >= 0 && x < t->img_w && y >= 0 && y < t->img_h;
}

static size_t index_of(const struct loss_ctx *c, int x, int y)
{
	return (size_t)(y - c->t->ty) * c->t->tw + (size_t)(x - c->t->tx);
}

/* prediction and target of channel o at image pixel (x, y), in [-1, 1] */
static double pred(const struct loss_ctx *c, int x, int y, int o)
{
	return c->y[(size_t)o * c->n + index_of(c, x, y)];
}

static double truth(const struct loss_ctx *c, int x, int y, int o)
{
	return 2.0 *
		   c->target->rgb[((size_t)y * c->target->width + x) * 3 + o] -
	       1.0;
}

static double err(const struct loss_ctx *c, int x, int y, int o)
{
	return pred(c, x, y, o) - truth(c, x, y, o);
}

static void add_grad(struct loss_ctx *c, int x, int y, int o, double v)
{
	if (c->dy)
		c->dy[(size_t)o * c->n + index_of(c, x, y)] += v;
}

static double gauss(int k)
{
	return exp(-(double)(k * k) / (2.0 * NN_SSIM_SIGMA * NN_SSIM_SIGMA));
}

/* mean of (u^2 + v^2) over 2 W H, u = eR - eG, v = eB - eG */
static double chroma_at(struct loss_ctx *c, double weight, int x, int y,
			double *sum)
{
	double wh = (double)c->t->img_w * c->t->img_h;
	double u = err(c, x, y, 0) - err(c, x, y, 1);
	double v = err(c, x, y, 2) - err(c, x, y, 1);
	*sum += u * u + v * v;
	/* d/du (u^2) = 2u; u = eR - eG, v = eB - eG */
	double k = weight / (2.0 * wh) * 2.0;
	add_grad(c, x, y, 0, k * u);
	add_grad(c, x, y, 1, -k * (u + v));
	add_grad(c, x, y, 2, k * v);
	return weight * (u * u + v * v) / (2.0 * wh);
}

/* the finite differences of the error to the right and below, over 6 W H */
static double grad_at(struct loss_ctx *c, double weight, int x, int y,
		      double *sum)
{
	static const int steps[2][2] = { { 1, 0 }, { 0, 1 } };
	double wh = (double)c->t->img_w * c->t->img_h, loss = 0;
	for (int s = 0; s < 2; s++) {
		int bx = x + steps[s][0], by = y + steps[s][1];
		if (!inside(c->t, bx, by))
			continue;
		for (int o = 0; o < 3; o++) {
			double d = err(c, bx, by, o) - err(c, x, y, o);
			*sum += d * d;
			loss += weight * d * d / (6.0 * wh);
			add_grad(c, bx, by, o, weight * 2.0 * d / (6.0 * wh));
			add_grad(c, x, y, o, -weight * 2.0 * d / (6.0 * wh));
		}
	}
	return loss;
}

/* 1 - SSIM of channel o in the window centred on (x, y), over 3 W H */
static double ssim_at(struct loss_ctx *c, double weight, int x, int y, int o,
		      double *sum)
{
	const double c1 = 0.01 * 0.01, c2 = 0.03 * 0.03;
	const int r = NN_SSIM_RADIUS;
	double wh = (double)c->t->img_w * c->t->img_h;
	double z = 0, mx = 0, my = 0, exx = 0, eyy = 0, exy = 0;
	for (int j = -r; j <= r; j++) {
		for (int i = -r; i <= r; i++) {
			if (!inside(c->t, x + i, y + j))
				continue;
			double w = gauss(i) * gauss(j);
			double p = 0.5 * (pred(c, x + i, y + j, o) + 1.0);
			double q = 0.5 * (truth(c, x + i, y + j, o) + 1.0);
			z += w;
			mx += w * p, my += w * q;
			exx += w * p * p, eyy += w * q * q, exy += w * p * q;
		}
	}
	mx /= z, my /= z, exx /= z, eyy /= z, exy /= z;
	double a1 = 2 * mx * my + c1, a2 = 2 * (exy - mx * my) + c2;
	double b1 = mx * mx + my * my + c1;
	double b2 = (exx - mx * mx) + (eyy - my * my) + c2;
	double s = a1 * a2 / (b1 * b2);
	*sum += 1.0 - s;

	/* S through mx, exx and exy (the target's sums are constants) */
	double ds_mx =
	    s * (2 * my / a1 - 2 * my / a2 - 2 * mx / b1 + 2 * mx / b2);
	double ds_exx = -s / b2, ds_exy = 2 * s / a2;
	double dl_ds = -weight / (3.0 * wh);
	for (int j = -r; j <= r; j++) {
		for (int i = -r; i <= r; i++) {
			if (!inside(c->t, x + i, y + j))
				continue;
			double w = gauss(i) * gauss(j) / z;
			double p = 0.5 * (pred(c, x + i, y + j, o) + 1.0);
			double q = 0.5 * (truth(c, x + i, y + j, o) + 1.0);
			double ds_dp =
			    w * (ds_mx + 2 * p * ds_exx + q * ds_exy);
			/* p = (y + 1) / 2 */
			add_grad(c, x + i, y + j, o, dl_ds * ds_dp * 0.5);
		}
	}
	return weight * (1.0 - s) / (3.0 * wh);
}

double ref_loss_terms(const struct nn_recipe *r, const struct ref_tile *t,
		      const struct image *target, const double *y, double *dy,
		      double sums[3])
{
	struct loss_ctx c = { t, target, y, dy, (size_t)t->tw * t->th };
	double loss = 0, s[3] = { 0, 0, 0 };
	for (int py = t->cy; py < t->cy + t->ch; py++) {
		for (int px = t->cx; px < t->cx + t->cw; px++) {
			if (r->loss_chroma > 0)
				loss += chroma_at(&c, r->loss_chroma, px, py,
						  &s[0]);
			if (r->loss_grad > 0)
				loss +=
				    grad_at(&c, r->loss_grad, px, py, &s[1]);
			for (int o = 0; r->loss_ssim > 0 && o < 3; o++)
				loss +=
				    ssim_at(&c, r->loss_ssim, px, py, o, &s[2]);
		}
	}
	if (sums)
		for (int j = 0; j < 3; j++)
			sums[j] = s[j];
	return loss;
}
