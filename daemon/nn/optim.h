/*
 * optim.h - the optimizer step of a fit (optim.c): Adam, Muon for the
 * pointwise weights, the weight average, and the copy that keeps the best
 * model. Used by fit.c and package.c only.
 */
#ifndef VKINR_NN_OPTIM_H
#define VKINR_NN_OPTIM_H

struct nn_fit;

#include <stdint.h>

/* Device bytes nn_optim_alloc will take, for the tile planner. */
uint64_t nn_optim_bytes(const struct nn_fit *fit);
/* Allocates what the recipe needs besides Adam's moments (Muon's momentum
 * and scratch, the average), from the fit's arena. */
int nn_optim_alloc(struct nn_fit *fit);
/* A fresh start: gradient and every moment zero, the average and the
 * best model = params. */
int nn_optim_reset(struct nn_fit *fit, const float *params);
/* Records fit->adam_prog: the best model kept, Muon, Adam, then the
 * average; and, with an average, fit->keep_average_prog. */
int nn_optim_record(struct nn_fit *fit);
/* The floats of the host-visible step buffer (see optim.c). */
#define NN_STEP_FLOATS 8
/* Writes the step buffer for epoch t (1-based) at learning rate lr. */
void nn_optim_prepare(struct nn_fit *fit, int t, double lr);
/* Whether the next run of fit->adam_prog first copies the weights, as
 * they are before its step, into the best model. */
void nn_optim_keep_live(struct nn_fit *fit, int keep);

#endif
