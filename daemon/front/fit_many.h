/*
 * fit_many.h - `vkinrd --fit` of several images (or a folder): each image
 * fitted with the same settings, as packs (fit_many.c).
 */
#ifndef VKINR_FIT_MANY_H
#define VKINR_FIT_MANY_H

#include "front/fit_cost.h"
#include "nn/model.h"

struct gpu_context;

struct fit_many_options {
	struct nn_config cfg;
	const char *out; /* OUT/NAME.safetensors, OUT/NAME.png */
	int pack;        /* fits a pack at most; 0: as the device holds */
	int json, quiet;
	int timings;   /* the pack epoch's host and GPU times, by pass */
	int force;     /* replace outputs that exist (the user's own) */
	int recursive; /* a folder's subfolders too: OUT/SUB/NAME.png */
	struct fit_resize resize; /* --resize, --max-side: each image */
	int yes; /* fit even when it would be slow on a CPU device */
};

/* args: image paths or folders; returns the exit status (3: an output
 * was refused, nothing written; 2: it would be slow on the CPU device
 * without yes, nothing fitted; 128 + N: stopped by signal N). */
int fit_many_run(const struct fit_many_options *o, char **args, int nargs,
		 struct gpu_context *gpu);

#endif
