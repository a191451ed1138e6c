/*
 * optim_ref.c - the optimizer step in plain C and double precision: Adam,
 * Muon with Newton-Schulz on the pointwise weights, the weight average.
 * Same arithmetic and order of operations as daemon/nn/optim.c and its
 * shaders (muon.comp, ns_gemm.comp, adam.comp, average.comp).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"

/* c = a b (n x n, row-major); with trans_b, c = a b^T */
static void matmul(int n, const double *a, const double *b, int trans_b,
		   double *c)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double s = 0;
			for (int k = 0; k < n; k++)
				s += a[i * n + k] *
				     (trans_b ? b[j * n + k] : b[k * n + j]);
			c[i * n + j] = s;
		}
}

void ref_newton_schulz(int n, const double *g, double *out)
{
	static const double a = 3.4445, b = -4.7750, c = 2.0315;
	size_t nn = (size_t)n * n;
	double *x = malloc(nn * sizeof(double)),
	       *m = malloc(nn * sizeof(double));
	double *aa = malloc(nn * sizeof(double)),
	       *bb = malloc(nn * sizeof(double));
	double norm = 0;
	for (size_t i = 0; i < nn; i++)
		norm += g[i] * g[i];
	norm = sqrt(norm) + 1e-7;
	for (size_t i = 0; i < nn; i++)
		x[i] = g[i] / norm;
	for (int s = 0; s < 5; s++) {
		matmul(n, x, x, 1, aa);
		matmul(n, aa, aa, 0, m);
		for (size_t i = 0; i < nn; i++)
			bb[i] = b * aa[i] + c * m[i];
		matmul(n, bb, x, 0, m);
		for (size_t i = 0; i < nn; i++)
			x[i] = a * x[i] + m[i];
	}
	memcpy(out, x, nn * sizeof(double));
	free(x), free(m), free(aa), free(bb);
}

void ref_optim_step(const struct nn_config *cfg, const struct nn_layout *l,
		    int t, double lr, const double *grad, struct ref_optim *s)
{
	size_t nf = (size_t)cfg->nf, nn = nf * nf;
	double *g = malloc(l->total * sizeof(double));
	memcpy(g, grad, l->total * sizeof(double));
	if (cfg->recipe.optimizer == NN_OPTIMIZER_MUON) {
		double *u = malloc(nn * sizeof(double)),
		       *o = malloc(nn * sizeof(double));
		for (int k = 0; k < cfg->nblocks; k++) {
			double *gk = g + l->pw_w[k], *mk = s->muon_m + k * nn;
			for (size_t i = 0; i < nn; i++) {
				mk[i] = 0.95 * mk[i] + gk[i];
				u[i] = gk[i] + 0.95 * mk[i];
				gk[i] = 0; /* Adam leaves these weights alone */
			}
			ref_newton_schulz((int)nf, u, o);
			double step = lr * 0.2 * sqrt((double)nf);
			for (size_t i = 0; i < nn; i++)
				s->params[l->pw_w[k] + i] -= step * o[i];
		}
		free(u), free(o);
	}
	double bc1 = 1 - pow(0.9, t), bc2 = sqrt(1 - pow(0.999, t));
	for (size_t i = 0; i < l->total; i++) {
		s->m[i] += (g[i] - s->m[i]) * 0.1;
		s->v[i] = s->v[i] * 0.999 + g[i] * g[i] * 0.001;
		s->params[i] -=
		    lr / bc1 * (s->m[i] / (sqrt(s->v[i]) / bc2 + 1e-8));
	}
	if (cfg->recipe.average == NN_AVERAGE_EMA) {
		double decay =
		    fmin(cfg->recipe.ema_decay, (1.0 + t) / (10.0 + t));
		for (size_t i = 0; i < l->total; i++)
			s->average[i] +=
			    (s->params[i] - s->average[i]) * (1 - decay);
	}
	free(g);
}
