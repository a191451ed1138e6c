/*
 * visible.h - the Vulkan devices a scheduler assigned to this process,
 * from CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, SLURM_STEP_GPUS or
 * SLURM_JOB_GPUS (indices, GPU UUIDs or PCI addresses). Pure data: it
 * reads a device list, it opens nothing. See visible.c for the rules.
 */
#ifndef VKINR_GPU_VISIBLE_H
#define VKINR_GPU_VISIBLE_H

#include "gpu/gpu.h"

/* The variables, as read from the environment (NULL when unset). */
struct gpu_env {
	const char *cuda_visible, *rocr_visible, *step_gpus, *job_gpus;
	int in_slurm; /* SLURM_JOB_ID is set */
};

void gpu_env_read(struct gpu_env *env);

/*
 * Fills picked with positions in infos (gpu_list_devices' list) of the
 * GPUs env assigns, at most max, and sets *npicked to their count; -1 when
 * nothing assigns devices (outside a scheduler: the caller chooses as
 * usual), 0 when a Slurm job was given none. Returns 0, or with a sentence
 * in err: ERR_NO_DEVICE (GPUs named, Vulkan shows none), ERR_NOT_FOUND
 * (an entry matches no GPU), ERR_INVALID (an entry is unreadable).
 */
int gpu_env_pick(const struct gpu_device_info *infos, int count,
		 const struct gpu_env *env, int *picked, int max, int *npicked,
		 char *err, size_t errlen);

#endif
