/*
 * test_visible.c - unit tests of daemon/gpu/visible.c over a made-up
 * device list: four NVIDIA GPUs listed by Vulkan out of PCI order, one AMD
 * GPU and lavapipe. Indices count a vendor's GPUs in PCI order; UUIDs and
 * PCI addresses match whatever index they have; a Slurm job given no GPU
 * gets none; node-wide numbers inside a cgroup mean the GPUs it shows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proto/errors.h"
#include "gpu/visible.h"

enum { COUNT = 6 };
static struct gpu_device_info devices[COUNT];

static void add(int pos, int index, uint32_t vendor, int bus, int is_cpu)
{
	struct gpu_device_info *d = &devices[pos];
	memset(d, 0, sizeof(*d));
	d->index = index;
	d->vendor_id = vendor;
	d->is_cpu = is_cpu;
	d->has_pci = !is_cpu;
	d->pci_bus = (uint32_t)bus;
	for (unsigned i = 0; i < VK_UUID_SIZE; i++)
		d->uuid[i] = (uint8_t)(0x10 * (unsigned)pos + i);
}

/* Vulkan's order is not the bus order: the GPU on bus 0x1b is listed 3rd. */
static int setup(void **state)
{
	add(0, 0, 0x10de, 0x3b, 0); /* NVIDIA GPU 1 in bus order */
	add(1, 1, 0x10de, 0x86, 0); /* NVIDIA GPU 2 */
	add(2, 2, 0x10de, 0x1b, 0); /* NVIDIA GPU 0 */
	add(3, 3, 0x10de, 0xaf, 0); /* NVIDIA GPU 3 */
	add(4, 4, 0x1002, 0x05, 0); /* AMD GPU 0 */
	add(5, 5, 0x10005, 0, 1);   /* lavapipe */
	return 0;
}

static int pick(const struct gpu_env *env, int *picked, int *n)
{
	char err[256] = "";
	int rc =
	    gpu_env_pick(devices, COUNT, env, picked, 8, n, err, sizeof(err));
	if (rc)
		assert_true(strlen(err) > 0); /* every refusal says why */
	return rc;
}

static void test_cuda_indices_count_nvidia_gpus_by_bus(void **state)
{
	struct gpu_env env = { .cuda_visible = "0,2", .in_slurm = 1 };
	int picked[8], n;
	assert_int_equal(pick(&env, picked, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(picked[0], 2); /* bus 0x1b */
	assert_int_equal(picked[1], 1); /* bus 0x86 */
}

static void test_uuid_and_pci_address(void **state)
{
	/* devices[3]'s UUID: bytes 0x30..0x3f, written the way nvidia-smi
	 * does, plus a PCI address for devices[0]. */
	struct gpu_env env = { .cuda_visible =
				   "GPU-30313233-3435-3637-3839-3a3b3c3d3e3f,"
				   "0000:3b:00.0" };
	int picked[8], n;
	assert_int_equal(pick(&env, picked, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(picked[0], 3);
	assert_int_equal(picked[1], 0);
}

static void test_unknown_uuid_and_mig_refused(void **state)
{
	struct gpu_env env = { .cuda_visible =
				   "GPU-ffffffff-3435-3637-3839-3a3b3c3d3e3f" };
	int picked[8], n;
	assert_int_equal(pick(&env, picked, &n), ERR_NOT_FOUND);
	env.cuda_visible = "MIG-0c1f9e3e-8f3e-5b5e-9c7d-1a2b3c4d5e6f";
	assert_int_equal(pick(&env, picked, &n), ERR_NOT_FOUND);
	env.cuda_visible = "zero";
	assert_int_equal(pick(&env, picked, &n), ERR_INVALID);
}

static void test_rocr_counts_amd_gpus(void **state)
{
	struct gpu_env env = { .rocr_visible = "0", .cuda_visible = "0" };
	int picked[8], n;
	assert_int_equal(pick(&env, picked, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(picked[0], 4);
}

static void test_slurm_gpus_when_no_cuda_variable(void **state)
{
	struct gpu_env env = { .step_gpus = "3",
			       .job_gpus = "0",
			       .in_slurm = 1 };
	int picked[8], n;
	assert_int_equal(pick(&env, picked, &n), 0);
	assert_int_equal(n, 1);
	/* any vendor: buses 05 (AMD), 1b, 3b, 86, af; the 4th is 0x86 */
	assert_int_equal(picked[0], 1);
}

static void test_no_variable(void **state)
{
	struct gpu_env env = { 0 };
	int picked[8], n;
	assert_int_equal(pick(&env, picked, &n), 0);
	assert_int_equal(n, -1); /* not under a scheduler: the usual choice */
	env.in_slurm = 1;
	assert_int_equal(pick(&env, picked, &n), 0);
	assert_int_equal(n, 0); /* a Slurm job without a GPU gets none */
	env.cuda_visible = "";
	assert_int_equal(pick(&env, picked, &n), 0);
	assert_int_equal(n, 0);
	env.cuda_visible = "NoDevFiles";
	assert_int_equal(pick(&env, picked, &n), 0);
	assert_int_equal(n, 0);
}

static void test_index_past_the_gpus(void **state)
{
	struct gpu_env env = { .cuda_visible = "7" };
	int picked[8], n;
	assert_int_equal(pick(&env, picked, &n), ERR_NOT_FOUND);
	/* only lavapipe: GPUs named, none shown */
	struct gpu_device_info only_cpu = devices[5];
	char err[256];
	assert_int_equal(
	    gpu_env_pick(&only_cpu, 1, &env, picked, 8, &n, err, sizeof(err)),
	    ERR_NO_DEVICE);
	assert_non_null(strstr(err, "CUDA_VISIBLE_DEVICES"));
}

static void test_cgroup_keeps_node_numbers(void **state)
{
	/* A cgroup shows two of the node's GPUs; Slurm says "5,6". */
	struct gpu_device_info shown[2] = { devices[0], devices[1] };
	struct gpu_env env = { .step_gpus = "5,6", .in_slurm = 1 };
	int picked[8], n;
	char err[256];
	assert_int_equal(
	    gpu_env_pick(shown, 2, &env, picked, 8, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(picked[0], 0);
	assert_int_equal(picked[1], 1);
	env.step_gpus = "5,6,7";
	assert_int_equal(
	    gpu_env_pick(shown, 2, &env, picked, 8, &n, err, sizeof(err)),
	    ERR_NOT_FOUND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cuda_indices_count_nvidia_gpus_by_bus),
		cmocka_unit_test(test_uuid_and_pci_address),
		cmocka_unit_test(test_unknown_uuid_and_mig_refused),
		cmocka_unit_test(test_rocr_counts_amd_gpus),
		cmocka_unit_test(test_slurm_gpus_when_no_cuda_variable),
		cmocka_unit_test(test_no_variable),
		cmocka_unit_test(test_index_past_the_gpus),
		cmocka_unit_test(test_cgroup_keeps_node_numbers),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
