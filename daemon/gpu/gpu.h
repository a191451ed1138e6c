/*
 * gpu.h - the thin Vulkan layer: instance, device choice, memory, compute
 * pipelines, recorded command programs and timestamps.
 *
 * It knows nothing of ConvSIREN. Its users ask for buffers (sub-allocated
 * from a few large device allocations by an arena), pipelines (by the name
 * of an embedded shader variant, with specialization constants) and
 * programs: a command buffer recorded once, as a list of dispatches and
 * barriers with their descriptor sets, then replayed as often as needed.
 *
 * Every VkResult is checked through GPU_CHECK, which logs the call and the
 * result's name; device loss and out-of-memory come back as ERR_DEVICE_LOST
 * and ERR_DEVICE_OOM for the caller to handle. A gpu_context and everything
 * made from it belong to one thread.
 *
 * The test switch VKINR_FAULT=device_lost:N (or oom:N) makes the Nth program
 * run (or allocation) fail as if the device had, to test that path.
 */
#ifndef VKINR_GPU_H
#define VKINR_GPU_H

#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#define GPU_MAX_BINDINGS 8
#define GPU_MAX_PUSH 128 /* bytes; the minimum every device guarantees */
#define GPU_MAX_SPEC 8

struct gpu_device_info {
	int index;
	char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
	VkPhysicalDeviceType type;
	const char *type_name; /* "discrete", "integrated", "virtual", "cpu" */
	uint32_t api_version;
	uint32_t vendor_id, device_id;
	uint64_t device_local_bytes; /* largest device-local heap */
	uint64_t budget_bytes; /* VK_EXT_memory_budget, else the heap size */
	uint64_t max_storage_range; /* maxStorageBufferRange */
	uint64_t max_allocation;    /* maxMemoryAllocationSize */
	uint32_t max_shared_bytes;  /* maxComputeSharedMemorySize */
	uint32_t subgroup_size;
	/* Cooperative matrices with what gemm_coop.comp needs: the 16x8x16
	 * shape, fp16 x fp16 + fp32 at subgroup scope, subgroups of 32,
	 * shaderFloat16 and 16-bit storage buffers; through either extension */
	int has_coopmat_nv;      /* VK_NV_cooperative_matrix offers it */
	int has_coopmat_khr;     /* VK_KHR_cooperative_matrix offers it */
	int has_tensor_cores;    /* one of them does, and is enabled */
	const char *coopmat_api; /* the one enabled: "nv", "khr" or NULL;
				      * NV where both are (VKINR_COOPMAT=khr
				      * picks KHR, to compare them) */
	/* VK_NV_cooperative_matrix2 with what gemm_cm2.comp needs (workgroup
	 * scope, flexible dimensions at fp16 x fp16 + fp32 for 256
	 * invocations, per-element operations, tensor addressing), and this
	 * binary embeds those shaders (glslang 15: shaders/variants_cm2.txt;
	 * the tests, the tools and a bench build, never plain vkinrd, whose
	 * engine picks no cm2 family): enabled, with VK_KHR_cooperative_matrix,
	 * beside coopmat_api's extension. VKINR_COOPMAT2=0 leaves it off, to
	 * compare. */
	int has_coopmat2;
	int has_float16;
	int has_float16_storage; /* and 16-bit storage buffers: enabled
				      * (the fp16 passes run; lavapipe's too) */
	int is_cpu;
	/* buffer device addresses (Vulkan 1.2's bufferDeviceAddress): the
	 * packed programs (gpu_pack_program_create) run */
	int has_packs;
	uint32_t max_groups_z; /* maxComputeWorkGroupCount[2] */
	/* Identity, to find the device a scheduler assigned (visible.c). */
	uint8_t uuid[VK_UUID_SIZE]; /* VkPhysicalDeviceIDProperties */
	int has_pci;                /* VK_EXT_pci_bus_info was offered */
	uint32_t pci_domain, pci_bus, pci_device, pci_function;
};

/*
 * The switches that let benchmarks and tests compare the engine's pass
 * families, read from the environment once, when a device opens
 * (switches.c); daemon/nn/variants.c says what each picks. gpu/ only
 * carries them.
 */
struct gpu_switches {
	int passes;            /* VKINR_PASSES: 1 cpu, 0 gpu, -1 unset */
	int fused_sine_off;    /* VKINR_FUSED_SINE=0 */
	int dw_strip_off;      /* VKINR_DW_STRIP=0 */
	int dw_pair_off;       /* VKINR_DW_PAIR=0 */
	int dw_rows;           /* VKINR_DW_ROWS=1 */
	int dw_tiled;          /* VKINR_DW_TILED: 0, 1, -1 unset (or other) */
	int half_storage_off;  /* VKINR_HALF_STORAGE=0 */
	int pack_lanes_off;    /* VKINR_PACK_LANES=0 (see gpu_pipeline_get) */
	int dense_visible_off; /* VKINR_DENSE_VISIBLE=0 (memory.c) */
	char gemm[32];         /* VKINR_GEMM, "" unset */
	int average_every;     /* VKINR_AVERAGE_EVERY when over 0, else 0 */
	int has_fp32_finish;   /* VKINR_FP32_FINISH in [0, 1]: fp32_finish */
	double fp32_finish;
};
/* Reads the switches from the environment (gpu_create does, once). */
void gpu_switches_read(struct gpu_switches *out);

/* Lists the devices the loader shows, in the order of preference used by
 * gpu_create (discrete, integrated, virtual, CPU; then by index). */
int gpu_list_devices(struct gpu_device_info **out, int *count, char *err,
		     size_t errlen);

struct gpu_context;

/*
 * Opens a device. selector is NULL (the preferred one), a number (index as
 * listed) or a case-insensitive substring of the device name.
 */
int gpu_create(struct gpu_context **out, const char *selector, char *err,
	       size_t errlen);
void gpu_destroy(struct gpu_context *ctx);
const struct gpu_device_info *gpu_info(const struct gpu_context *ctx);
/* The switches read when ctx opened; gpu_switches_set replaces them (the
 * tests, which compare families in one process). */
const struct gpu_switches *gpu_switches(const struct gpu_context *ctx);
void gpu_switches_set(struct gpu_context *ctx, const struct gpu_switches *sw);
/* The cores the CPU device computes on (LP_NUM_THREADS, when set, as
 * lavapipe takes it; else the cores online). */
int gpu_cpu_cores(void);
/* Bytes of device memory this context holds now, and at most so far. */
uint64_t gpu_bytes_in_use(const struct gpu_context *ctx);
uint64_t gpu_bytes_peak(const struct gpu_context *ctx);
/* Once a context has seen device loss every call fails fast
 * (ERR_DEVICE_LOST); the owner destroys it and creates a new one. */

/* ------------------------------------------------------------ memory */

struct gpu_arena;

struct gpu_buffer {
	VkBuffer handle;     /* its arena block's (memory.c) */
	VkDeviceSize offset; /* where in it */
	VkDeviceSize size;
	void *mapped;     /* host-visible buffers only */
	uint64_t address; /* its device address (info.has_packs), else 0 */
};

/* An arena hands out buffers from large blocks and frees them together. */
int gpu_arena_create(struct gpu_context *ctx, struct gpu_arena **out);
void gpu_arena_destroy(struct gpu_arena *arena);
/* Device-local storage buffer (host_visible: mapped, coherent, for
 * read-back and upload). size must not exceed max_storage_range. */
int gpu_buffer_alloc(struct gpu_arena *arena, VkDeviceSize size,
		     int host_visible, struct gpu_buffer *out);
/* Bytes of device memory the arena holds. */
uint64_t gpu_arena_bytes(const struct gpu_arena *arena);

/* Copies through a staging buffer; blocks until done. */
int gpu_upload(struct gpu_context *ctx, const struct gpu_buffer *dst,
	       VkDeviceSize offset, const void *data, VkDeviceSize size);
int gpu_download(struct gpu_context *ctx, const struct gpu_buffer *src,
		 VkDeviceSize offset, void *data, VkDeviceSize size);
/* Several downloads with one wait: each copy of list moved to its host
 * memory, as gpu_download would one by one. */
struct gpu_copy {
	const struct gpu_buffer *buf;
	VkDeviceSize offset;
	void *host;
	VkDeviceSize size;
};
int gpu_download_many(struct gpu_context *ctx, const struct gpu_copy *list,
		      int n);
int gpu_fill_zero(struct gpu_context *ctx, const struct gpu_buffer *dst);

/* --------------------------------------------------------- pipelines */

struct gpu_pipeline;

/* Gets (creating and caching) the pipeline for an embedded shader variant
 * with nbindings storage buffers, push_bytes of push constants and the
 * given specialization constants (constant_id 0..nspec-1, 32-bit each). */
int gpu_pipeline_get(struct gpu_context *ctx, const char *variant,
		     int nbindings, uint32_t push_bytes, const uint32_t *spec,
		     int nspec, struct gpu_pipeline **out);

/* ----------------------------------------------------------- programs */

struct gpu_program;

int gpu_program_create(struct gpu_context *ctx, int max_timestamps,
		       struct gpu_program **out);
void gpu_program_destroy(struct gpu_program *prog);
/* Records a dispatch: buffers bound at bindings 0..n-1 (whole buffers),
 * push constants, workgroup counts. Returns 0 or an error. */
int gpu_program_dispatch(struct gpu_program *prog, struct gpu_pipeline *pipe,
			 const struct gpu_buffer *const *buffers, int nbuffers,
			 const void *push, uint32_t push_bytes, uint32_t gx,
			 uint32_t gy, uint32_t gz);
/* A compute-to-compute memory barrier (all shader writes before it are
 * visible to all shader reads after it). */
void gpu_program_barrier(struct gpu_program *prog);
/* Writes a timestamp; returns its slot or -1 when none are left. */
int gpu_program_timestamp(struct gpu_program *prog);
int gpu_program_end(struct gpu_program *prog);
/* Submits and waits. */
int gpu_program_run(struct gpu_program *prog);
/* Submits several programs in order in one submission, and waits. */
int gpu_programs_run(struct gpu_program *const *progs, int n);
/* The same in two halves, so that the host works while they run: the
 * submission, then the wait (and the programs' timestamps read). Between
 * them nothing else may run on the context; any transfer or run waits
 * for them first. */
int gpu_programs_start(struct gpu_program *const *progs, int n);
int gpu_programs_finish(struct gpu_program *const *progs, int n);
/*
 * Packed programs: one program that does the work of n programs recorded
 * alike (the same pipelines, dispatch by dispatch, and the same barriers;
 * gpu_programs_alike), each with its own buffers, push constants and
 * workgroup counts. Each dispatch of the packed program runs the variant
 * "NAME_pk" of the pipeline (built by the Makefile from the same source:
 * buffers reached by their device addresses, one slot a program, the slot
 * in the workgroup's z), so n small fits cost the launches of one. Each
 * slot computes exactly what its own program would, bit for bit.
 *
 * mask is a host-visible buffer of at least n uint32 that the caller
 * writes before each run: slot i runs only while mask[i] is not 0.
 * The slots' timestamps are written at the same places, so a stage of
 * theirs (from, to) times that stage of the whole pack. Returns ERR_INVALID when the programs are
 * not alike or the device has no packs.
 */
int gpu_programs_alike(const struct gpu_program *a,
		       const struct gpu_program *b);
int gpu_pack_program_create(struct gpu_context *ctx,
			    struct gpu_program *const *progs, int n, int cap,
			    const struct gpu_buffer *mask,
			    struct gpu_program **out);
/*
 * A packed program has cap slots (cap >= n, and mask room for cap): the
 * first n hold progs, the others start empty. gpu_pack_program_set puts
 * another program's work in a slot (a fit joining a pack, in the place
 * of one that left, or in an empty one) without recording anything
 * again: 0, or ERR_INVALID when prog is not alike the packed program's
 * or has more workgroups in a dispatch than it was recorded for (then the
 * caller records a new one). The slots set reach the device with
 * gpu_pack_program_sync, whose uploads go with the next submission.
 */
int gpu_pack_program_set(struct gpu_program *packed, int slot,
			 const struct gpu_program *prog);
int gpu_pack_program_sync(struct gpu_program *packed);
/* The slots of a packed program that its next runs may need: those from
 * used on get no workgroups at all (their mask would only skip them).
 * A program starts with every slot used; a change is uploaded with the
 * next submission (0, or gpu_upload's error). */
int gpu_pack_program_use(struct gpu_program *packed, int used);

/* Milliseconds between two timestamp slots of the last run (0 when the
 * device has no timestamps on its compute queue). */
double gpu_program_elapsed_ms(const struct gpu_program *prog, int from, int to);

#endif
