/*
 * visible.c - which Vulkan devices a scheduler gave this process.
 *
 * Slurm (and most launchers after it) tell a task its GPUs through
 * environment variables written for CUDA or ROCm: CUDA_VISIBLE_DEVICES,
 * ROCR_VISIBLE_DEVICES, SLURM_STEP_GPUS, SLURM_JOB_GPUS. Vulkan drivers do
 * not read them, so a process that opened "the preferred device" would
 * take another job's GPU. This module turns those lists into entries of
 * gpu_list_devices()'s list; it only reads data (no Vulkan call), so a unit
 * test can feed it a made-up device list.
 *
 * An entry of a list is one of:
 *   - a UUID ("GPU-" then 32 hex digits, dashes anywhere), matched against
 *     the Vulkan device UUID (NVIDIA's Vulkan and CUDA UUIDs are the same);
 *   - a PCI address ("0000:3b:00.0" or "3b:00.0"), matched through
 *     VK_EXT_pci_bus_info;
 *   - an index k: the k-th GPU of that vendor (NVIDIA for CUDA_, AMD for
 *     ROCR_, any for SLURM_) in PCI bus order, which is the order Slurm and
 *     nvidia-smi number them in. Where a cgroup hides the other GPUs, Slurm
 *     still writes the node's numbers into SLURM_*_GPUS; when an index is
 *     past the GPUs Vulkan shows and the list names exactly as many GPUs
 *     as it shows, the list is taken to mean those.
 * CPU devices (lavapipe) are never a GPU a scheduler assigned.
 */
#include "gpu/visible.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"

#define VENDOR_NVIDIA 0x10de
#define VENDOR_AMD 0x1002

void gpu_env_read(struct gpu_env *env)
{
	env->cuda_visible = getenv("CUDA_VISIBLE_DEVICES");
	env->rocr_visible = getenv("ROCR_VISIBLE_DEVICES");
	env->step_gpus = getenv("SLURM_STEP_GPUS");
	env->job_gpus = getenv("SLURM_JOB_GPUS");
	env->in_slurm = getenv("SLURM_JOB_ID") != NULL;
}

static int has_vendor(const struct gpu_device_info *infos, int count,
		      uint32_t vendor)
{
	for (int i = 0; i < count; i++)
		if (!infos[i].is_cpu && infos[i].vendor_id == vendor)
			return 1;
	return 0;
}

/* The variable that speaks for this process, and the vendor its indices
 * count (0: any GPU). NULL when none is set. */
static const char *pick_variable(const struct gpu_device_info *infos, int count,
				 const struct gpu_env *env, const char **name,
				 uint32_t *vendor)
{
	if (env->rocr_visible && has_vendor(infos, count, VENDOR_AMD)) {
		*name = "ROCR_VISIBLE_DEVICES", *vendor = VENDOR_AMD;
		return env->rocr_visible;
	}
	if (env->cuda_visible) {
		*name = "CUDA_VISIBLE_DEVICES", *vendor = VENDOR_NVIDIA;
		return env->cuda_visible;
	}
	if (env->rocr_visible) {
		*name = "ROCR_VISIBLE_DEVICES", *vendor = VENDOR_AMD;
		return env->rocr_visible;
	}
	*vendor = 0;
	if (env->step_gpus) {
		*name = "SLURM_STEP_GPUS";
		return env->step_gpus;
	}
	if (env->job_gpus) {
		*name = "SLURM_JOB_GPUS";
		return env->job_gpus;
	}
	return NULL;
}

/* PCI bus order, then Vulkan's order for devices without an address. */
static int by_pci(const void *a, const void *b, void *base)
{
	const struct gpu_device_info *infos = base;
	const struct gpu_device_info *x = &infos[*(const int *)a];
	const struct gpu_device_info *y = &infos[*(const int *)b];
	if (x->has_pci != y->has_pci)
		return y->has_pci - x->has_pci;
	if (x->has_pci) {
		uint32_t kx[4] = { x->pci_domain, x->pci_bus, x->pci_device,
				   x->pci_function };
		uint32_t ky[4] = { y->pci_domain, y->pci_bus, y->pci_device,
				   y->pci_function };
		for (int i = 0; i < 4; i++)
			if (kx[i] != ky[i])
				return kx[i] < ky[i] ? -1 : 1;
	}
	return x->index - y->index;
}

/* The GPUs an index may name (positions in infos), in numbering order:
 * those of vendor when Vulkan shows any, else every GPU. */
static int numbered_gpus(const struct gpu_device_info *infos, int count,
			 uint32_t vendor, int *order)
{
	int n = 0;
	if (vendor && !has_vendor(infos, count, vendor))
		vendor = 0;
	for (int i = 0; i < count; i++)
		if (!infos[i].is_cpu &&
		    (!vendor || infos[i].vendor_id == vendor))
			order[n++] = i;
	qsort_r(order, (size_t)n, sizeof(*order), by_pci, (void *)infos);
	return n;
}

/* 32 hex digits of a UUID entry (after "GPU-", dashes skipped) into out;
 * -1 when it is not one. */
static int parse_uuid(const char *s, uint8_t out[VK_UUID_SIZE])
{
	int digits = 0;
	if (!strncasecmp(s, "GPU-", 4))
		s += 4;
	for (; *s; s++) {
		if (*s == '-')
			continue;
		if (!isxdigit((unsigned char)*s) || digits == 2 * VK_UUID_SIZE)
			return -1;
		int v = isdigit((unsigned char)*s)
			    ? *s - '0'
			    : tolower((unsigned char)*s) - 'a' + 10;
		if (digits % 2 == 0)
			out[digits / 2] = (uint8_t)(v << 4);
		else
			out[digits / 2] |= (uint8_t)v;
		digits++;
	}
	return digits == 2 * VK_UUID_SIZE ? 0 : -1;
}

/* "DDDD:BB:DD.F" or "BB:DD.F" (hex); -1 when it is not one. */
static int parse_pci(const char *s, uint32_t addr[4])
{
	unsigned d = 0, b, dev, f;
	char end;
	if (sscanf(s, "%x:%x:%x.%x%c", &d, &b, &dev, &f, &end) == 4 ||
	    (d = 0, sscanf(s, "%x:%x.%x%c", &b, &dev, &f, &end) == 3)) {
		addr[0] = d, addr[1] = b, addr[2] = dev, addr[3] = f;
		return 0;
	}
	return -1;
}

static int is_index(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* One entry to a position in infos, or a negative code with a sentence. */
static int match_entry(const struct gpu_device_info *infos, int count,
		       const char *entry, const int *order, int ngpus,
		       const char *var, char *err, size_t errlen)
{
	uint8_t uuid[VK_UUID_SIZE];
	uint32_t pci[4];

	if (is_index(entry)) {
		long k = strtol(entry, NULL, 10);
		if (k < ngpus)
			return order[k];
		snprintf(err, errlen,
			 "%s names GPU %s, but Vulkan shows %d GPU%s here", var,
			 entry, ngpus, ngpus == 1 ? "" : "s");
		return ngpus ? ERR_NOT_FOUND : ERR_NO_DEVICE;
	}
	if (!strncasecmp(entry, "MIG-", 4)) {
		snprintf(err, errlen,
			 "%s names the MIG instance %s: Vulkan cannot open a "
			 "MIG instance; ask Slurm for whole GPUs",
			 var, entry);
		return ERR_NOT_FOUND;
	}
	if (parse_uuid(entry, uuid) == 0) {
		for (int i = 0; i < count; i++)
			if (!infos[i].is_cpu &&
			    !memcmp(infos[i].uuid, uuid, VK_UUID_SIZE))
				return i;
	} else if (parse_pci(entry, pci) == 0) {
		for (int i = 0; i < count; i++)
			if (!infos[i].is_cpu && infos[i].has_pci &&
			    infos[i].pci_domain == pci[0] &&
			    infos[i].pci_bus == pci[1] &&
			    infos[i].pci_device == pci[2] &&
			    infos[i].pci_function == pci[3])
				return i;
	} else {
		snprintf(err, errlen,
			 "%s holds \"%s\", which is neither an index, a GPU "
			 "UUID nor a PCI address",
			 var, entry);
		return ERR_INVALID;
	}
	snprintf(err, errlen,
		 "%s names %s, which is none of the %d GPU%s "
		 "Vulkan shows here (`vkinrd --devices`)",
		 var, entry, ngpus, ngpus == 1 ? "" : "s");
	return ngpus ? ERR_NOT_FOUND : ERR_NO_DEVICE;
}

int gpu_env_pick(const struct gpu_device_info *infos, int count,
		 const struct gpu_env *env, int *picked, int max, int *npicked,
		 char *err, size_t errlen)
{
	const char *var = NULL;
	uint32_t vendor;
	const char *list = pick_variable(infos, count, env, &var, &vendor);
	int *order = calloc((size_t)(count > 0 ? count : 1), sizeof(*order));
	int n = 0, entries = 0, rc = 0, past_end = 0;

	*npicked = -1;
	if (!order)
		return ERR_NOMEM;
	if (!list) {
		/* Inside a Slurm job that set none of them: it has no GPU. */
		*npicked = env->in_slurm ? 0 : -1;
		free(order);
		return 0;
	}
	int ngpus = numbered_gpus(infos, count, vendor, order);
	char *copy = strdup(list), *save = NULL;
	if (!copy) {
		free(order);
		return ERR_NOMEM;
	}
	/* Slurm writes NoDevFiles when the GRES has no device files. */
	for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0;
	     tok = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*tok))
			tok++;
		if (!*tok || !strcasecmp(tok, "NoDevFiles"))
			continue;
		entries++;
		if (is_index(tok) && strtol(tok, NULL, 10) >= ngpus)
			past_end = 1;
		if (n == max) {
			snprintf(err, errlen, "%s names more than %d GPUs", var,
				 max);
			rc = ERR_TOO_LARGE;
			break;
		}
		int pos = past_end ? 0
				   : match_entry(infos, count, tok, order,
						 ngpus, var, err, errlen);
		if (pos < 0)
			rc = pos;
		else
			picked[n++] = pos;
	}
	if (rc == 0 && past_end) {
		/* Node-wide numbers inside a cgroup that shows only ours. */
		if (entries == ngpus && ngpus > 0) {
			for (n = 0; n < ngpus && n < max; n++)
				picked[n] = order[n];
		} else {
			snprintf(err, errlen,
				 "%s is \"%s\", but Vulkan shows %d GPU%s here",
				 var, list, ngpus, ngpus == 1 ? "" : "s");
			rc = ngpus ? ERR_NOT_FOUND : ERR_NO_DEVICE;
		}
	}
	free(copy);
	free(order);
	if (rc == 0)
		*npicked = n;
	return rc;
}
