/*
 * pack.c - several fits stepped as one program (see pack.h).
 *
 * The fits of a step are sorted into groups of fits whose programs were
 * recorded alike (gpu_programs_alike: the epoch, the optimizer step, the
 * average's render and the program that keeps the average as the best).
 * A group of several gets packed programs of each kind, with a mask that
 * says which slots run: before each kind runs, the host writes the mask
 * (a fit whose epoch diverged takes no optimizer step, only the fits
 * whose average is due render it). Around the programs, each fit takes
 * the same steps as nn_fit_step (fit_internal.h, struct nn_step), so the
 * metrics, the best model and the history are kept alike.
 *
 * A group's packed programs have room for more fits than it holds (a
 * power of two of slots): when the list of fits changes between two steps
 * (each fit's device side named by its serial), the fits that left free
 * their slots and the fits that came take free ones (gpu_pack_program_set:
 * a few entries of a table written, nothing recorded again), so jobs that
 * join and leave a running pack one by one do not record its programs
 * each time. The groups are built again only when a newcomer fits no
 * group's programs, a group is full, or most slots stand empty.
 */
#include "nn/pack.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/errors.h"
#include "gpu/gpu.h"
#include "nn/fit_internal.h"

enum pack_program {
	PK_EPOCH,
	PK_OPTIM,
	PK_AVG_RENDER,
	PK_KEEP_AVG,
	PK_RENDER, /* the exact render, for exports (pack_export.c) */
	PK_KINDS
};

struct pack_group {
	int n;                /* slots used at most so far (<= cap) */
	int cap;              /* the slots its packed programs have */
	int live;             /* fits in it now */
	struct nn_fit **fits; /* slot order; NULL: a free slot */
	uint64_t *serials;    /* of each slot's fit */
	int *index;           /* each slot's place in the caller's list, -1 */
	/* packed programs (NULL where the group has one fit, or the kind is
	 * not recorded: no average) */
	struct gpu_program *prog[PK_KINDS];
	struct gpu_arena *arena;
	struct gpu_buffer mask; /* n uint32, host-visible */
};

struct nn_pack {
	struct gpu_context *gpu;
	struct pack_group *groups;
	int ngroups;
	/* the list the groups were built for */
	struct nn_fit **fits;
	uint64_t *serials;
	int nfits;
	int builds;                     /* build_groups' runs */
	double host_ms[NN_PACK_PHASES]; /* the last step's, by phase */
	/* the last batch run_kind started and left running (async) */
	struct gpu_program *running[64];
	int nrunning;
};

static double clock_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

void nn_pack_host_ms(const struct nn_pack *pack, double ms[NN_PACK_PHASES])
{
	memcpy(ms, pack->host_ms, sizeof(pack->host_ms));
}

int nn_pack_supported(const struct gpu_context *gpu)
{
	return gpu_info(gpu)->has_packs;
}

int nn_pack_room(struct gpu_context *gpu, int most)
{
	/* the first fit's share: all the device holds now, and a margin */
	uint64_t each = gpu_bytes_in_use(gpu) + (1u << 20);
	uint64_t room = gpu_info(gpu)->budget_bytes / 10 * 6 / each;
	if (!nn_pack_supported(gpu) || room < 1)
		return 1;
	return room < (uint64_t)most ? (int)room : most;
}

int nn_pack_create(struct nn_pack **out, struct gpu_context *gpu)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return ERR_NOMEM;
	(*out)->gpu = gpu;
	return 0;
}

static void free_groups(struct nn_pack *pack)
{
	for (int g = 0; g < pack->ngroups; g++) {
		struct pack_group *grp = &pack->groups[g];
		for (int k = 0; k < PK_KINDS; k++)
			gpu_program_destroy(grp->prog[k]);
		gpu_arena_destroy(grp->arena);
		free(grp->fits);
		free(grp->serials);
		free(grp->index);
	}
	free(pack->groups);
	pack->groups = NULL;
	pack->ngroups = 0;
	free(pack->fits);
	free(pack->serials);
	pack->fits = NULL;
	pack->serials = NULL;
	pack->nfits = 0;
}

void nn_pack_destroy(struct nn_pack *pack)
{
	if (!pack)
		return;
	free_groups(pack);
	free(pack);
}

int nn_pack_builds(const struct nn_pack *pack) { return pack->builds; }

void nn_pack_shape(const struct nn_pack *pack, int *groups, int *fits)
{
	*groups = pack->ngroups;
	*fits = pack->nfits;
}

/* A fit's program of a kind (NULL where it has none). */
static struct gpu_program *own_program(const struct nn_fit *fit,
				       enum pack_program kind)
{
	switch (kind) {
	case PK_EPOCH:
		return fit->epoch_prog;
	case PK_OPTIM:
		return fit->adam_prog;
	case PK_AVG_RENDER:
		return fit->avg_render_prog;
	case PK_RENDER:
		return fit->render_prog;
	default:
		return fit->keep_average_prog;
	}
}

/* The group's first fit (NULL when every slot is free). */
static struct nn_fit *first_fit(const struct pack_group *grp)
{
	for (int s = 0; s < grp->n; s++)
		if (grp->fits[s])
			return grp->fits[s];
	return NULL;
}

void nn_pack_pass_ms(const struct nn_pack *pack, double ms[NN_PASS_COUNT])
{
	memset(ms, 0, NN_PASS_COUNT * sizeof(ms[0]));
	for (int g = 0; g < pack->ngroups; g++) {
		const struct pack_group *grp = &pack->groups[g];
		const struct nn_fit *fit = first_fit(grp);
		for (int i = 0; fit && i < fit->nstages; i++) {
			const struct stage_time *s = &fit->stages[i];
			for (int k = 0; k < PK_KINDS; k++) {
				if (s->prog != own_program(fit, k))
					continue;
				const struct gpu_program *prog =
				    grp->prog[PK_EPOCH] ? grp->prog[k]
							: s->prog;
				if (prog)
					ms[s->pass] += gpu_program_elapsed_ms(
					    prog, s->from, s->to);
			}
		}
	}
}

static int fits_alike(const struct nn_fit *a, const struct nn_fit *b)
{
	for (int k = 0; k < PK_KINDS; k++) {
		struct gpu_program *x = own_program(a, k),
				   *y = own_program(b, k);
		if (!x != !y || (x && !gpu_programs_alike(x, y)))
			return 0;
	}
	return 1;
}

static int same_list(const struct nn_pack *pack, struct nn_fit *const *fits,
		     int n)
{
	if (n != pack->nfits)
		return 0;
	for (int i = 0; i < n; i++)
		if (fits[i] != pack->fits[i] ||
		    fits[i]->serial != pack->serials[i])
			return 0;
	return 1;
}

/* The packed program of one kind for a group of several fits, with
 * room for grp->cap. */
static int record_kind(struct nn_pack *pack, struct pack_group *grp,
		       enum pack_program kind)
{
	struct nn_fit *first = first_fit(grp);
	if (!first || !own_program(first, kind))
		return 0;
	struct gpu_program **progs = calloc((size_t)grp->n, sizeof(*progs));
	int *slot = calloc((size_t)grp->n, sizeof(*slot));
	int m = 0, rc = progs && slot ? 0 : ERR_NOMEM;
	for (int s = 0; rc == 0 && s < grp->n; s++)
		if (grp->fits[s]) {
			slot[m] = s;
			progs[m++] = own_program(grp->fits[s], kind);
		}
	/* recorded for the live fits in the first slots, then each moved
	 * to its own slot (the free ones stay masked off) */
	rc = rc ? rc
		: gpu_pack_program_create(pack->gpu, progs, m, grp->cap,
					  &grp->mask, &grp->prog[kind]);
	for (int k = m - 1; rc == 0 && k >= 0; k--)
		if (slot[k] != k)
			rc = gpu_pack_program_set(grp->prog[kind], slot[k],
						  progs[k]);
	free(progs);
	free(slot);
	return rc ? rc : gpu_pack_program_sync(grp->prog[kind]);
}

/* The slots a group's programs get for n fits: a power of two, so that
 * a pack growing one job at a time records them a few times. */
static int capacity_for(int n)
{
	int cap = 8;
	while (cap < n)
		cap *= 2;
	return cap;
}

/* The packed programs of a group of several fits that every step runs,
 * and its mask; the exports' render is recorded when first asked for
 * (nn_pack_render), since most lists of fits never export. */
static int record_group(struct nn_pack *pack, struct pack_group *grp)
{
	int rc = gpu_arena_create(pack->gpu, &grp->arena);
	rc = rc ? rc
		: gpu_buffer_alloc(grp->arena, 4 * (uint64_t)grp->cap, 1,
				   &grp->mask);
	if (rc == 0)
		memset(grp->mask.mapped, 0, 4 * (size_t)grp->cap);
	for (int k = 0; rc == 0 && k < PK_KINDS; k++)
		if (k != PK_RENDER)
			rc = record_kind(pack, grp, k);
	return rc;
}

/* The list the groups hold now (for same_list and place_of). */
static int keep_list(struct nn_pack *pack, struct nn_fit *const *fits, int n)
{
	free(pack->fits);
	free(pack->serials);
	pack->fits = malloc((size_t)(n ? n : 1) * sizeof(*pack->fits));
	pack->serials = malloc((size_t)(n ? n : 1) * sizeof(*pack->serials));
	pack->nfits = 0;
	if (!pack->fits || !pack->serials)
		return ERR_NOMEM;
	for (int i = 0; i < n; i++) {
		pack->fits[i] = fits[i];
		pack->serials[i] = fits[i]->serial;
	}
	pack->nfits = n;
	return 0;
}

static int build_groups(struct nn_pack *pack, struct nn_fit *const *fits, int n)
{
	free_groups(pack);
	pack->builds++;
	pack->groups = calloc((size_t)n, sizeof(*pack->groups));
	if (!pack->groups || keep_list(pack, fits, n))
		return ERR_NOMEM;
	for (int i = 0; i < n; i++) {
		struct pack_group *grp = NULL;
		for (int g = 0; g < pack->ngroups && !grp; g++)
			if (fits_alike(pack->groups[g].fits[0], fits[i]))
				grp = &pack->groups[g];
		if (!grp) {
			grp = &pack->groups[pack->ngroups++];
			grp->fits = malloc((size_t)n * sizeof(*grp->fits));
			grp->index = malloc((size_t)n * sizeof(*grp->index));
			if (!grp->fits || !grp->index)
				return ERR_NOMEM;
		}
		grp->index[grp->n] = i;
		grp->fits[grp->n++] = fits[i];
	}
	for (int g = 0; g < pack->ngroups; g++) {
		struct pack_group *grp = &pack->groups[g];
		grp->live = grp->n;
		grp->cap = grp->n > 1 ? capacity_for(grp->n) : 1;
		/* room for the slots to come */
		struct nn_fit **f =
		    realloc(grp->fits, (size_t)grp->cap * sizeof(*f));
		int *ix = realloc(grp->index, (size_t)grp->cap * sizeof(*ix));
		grp->serials = calloc((size_t)grp->cap, sizeof(*grp->serials));
		if (f)
			grp->fits = f;
		if (ix)
			grp->index = ix;
		if (!f || !ix || !grp->serials)
			return ERR_NOMEM;
		for (int s = 0; s < grp->n; s++)
			grp->serials[s] = grp->fits[s]->serial;
		if (grp->n > 1) {
			int rc = record_group(pack, grp);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Where fit is in the list the groups were built for, or -1; hint: the
 * place to look first (callers name fits mostly in the list's order, so
 * a thousand exports need not walk it a thousand times). */
static int place_of(const struct nn_pack *pack, const struct nn_fit *fit,
		    int hint)
{
	if (hint >= 0 && hint < pack->nfits && pack->fits[hint] == fit &&
	    pack->serials[hint] == fit->serial)
		return hint;
	for (int j = 0; j < pack->nfits; j++)
		if (pack->fits[j] == fit && pack->serials[j] == fit->serial)
			return j;
	return -1;
}

/* A free slot for a newcomer (the i-th of the new list) in a group whose
 * packed programs it fits: 0, or ERR_INVALID when none has one. */
static int take_slot(struct nn_pack *pack, struct nn_fit *fit, int i)
{
	for (int g = 0; g < pack->ngroups; g++) {
		struct pack_group *grp = &pack->groups[g];
		if (!grp->prog[PK_EPOCH] || grp->live == grp->cap)
			continue;
		struct nn_fit *first = first_fit(grp);
		if (first && !fits_alike(first, fit))
			continue;
		int s = 0;
		while (s < grp->cap && (s < grp->n && grp->fits[s]))
			s++;
		int rc = 0;
		for (int k = 0; rc == 0 && k < PK_KINDS; k++) {
			struct gpu_program *own = own_program(fit, k);
			if (k == PK_RENDER && !grp->prog[k])
				continue; /* recorded when first asked for */
			if (!grp->prog[k] != !own)
				rc = ERR_INVALID;
			else if (own)
				rc = gpu_pack_program_set(grp->prog[k], s, own);
		}
		if (rc)
			continue; /* the slot keeps its old entries: masked */
		grp->fits[s] = fit;
		grp->serials[s] = fit->serial;
		grp->index[s] = i;
		grp->live++;
		if (s == grp->n)
			grp->n++;
		return 0;
	}
	return ERR_INVALID;
}

/*
 * The groups brought to a new list of fits without recording them again:
 * the fits that stay keep their slots, those gone free theirs, and each
 * newcomer takes a free slot of a group whose programs it fits. 0, or
 * ERR_INVALID when that cannot be done (build_groups then does it all).
 */
static int update_groups(struct nn_pack *pack, struct nn_fit *const *fits,
			 int n)
{
	if (!pack->ngroups)
		return ERR_INVALID;
	/* where each fit of the old list sits */
	int *gof = malloc((size_t)(pack->nfits + 1) * sizeof(*gof));
	int *sof = malloc((size_t)(pack->nfits + 1) * sizeof(*sof));
	int rc = gof && sof ? 0 : ERR_NOMEM;
	for (int j = 0; rc == 0 && j < pack->nfits; j++)
		gof[j] = -1;
	for (int g = 0; rc == 0 && g < pack->ngroups; g++) {
		struct pack_group *grp = &pack->groups[g];
		/* a lone fit's group (its own programs) keeps it, or empties:
		 * only a newcomer alike it needs the groups built again */
		for (int s = 0; rc == 0 && s < grp->n; s++) {
			int j = grp->index[s];
			if (grp->fits[s] && j >= 0 && j < pack->nfits) {
				gof[j] = g;
				sof[j] = s;
			}
			grp->index[s] = -1;
		}
	}
	/* the fits that stay; the others' slots are free after this */
	char *stays = calloc((size_t)(pack->nfits + 1), 1);
	int *newcomer = malloc((size_t)(n + 1) * sizeof(*newcomer));
	int nnew = 0, hint = 0;
	if (!stays || !newcomer)
		rc = rc ? rc : ERR_NOMEM;
	for (int i = 0; rc == 0 && i < n; i++) {
		int j = place_of(pack, fits[i], hint);
		if (j >= 0 && gof[j] >= 0) {
			pack->groups[gof[j]].index[sof[j]] = i;
			stays[j] = 1;
			hint = j + 1;
		} else {
			newcomer[nnew++] = i;
		}
	}
	for (int j = 0; rc == 0 && j < pack->nfits; j++)
		if (gof[j] >= 0 && !stays[j]) {
			struct pack_group *grp = &pack->groups[gof[j]];
			grp->fits[sof[j]] = NULL;
			grp->live--;
		}
	for (int k = 0; rc == 0 && k < nnew; k++)
		rc = take_slot(pack, fits[newcomer[k]], newcomer[k]);
	for (int g = 0; rc == 0 && g < pack->ngroups; g++) {
		struct pack_group *grp = &pack->groups[g];
		/* mostly empty: packed again, smaller; one fit left runs its
		 * own programs again (on a CPU device much faster than a
		 * packed one) */
		if (grp->prog[PK_EPOCH] &&
		    (grp->live == 1 ||
		     (grp->cap > 8 && grp->live * 4 < grp->cap)))
			rc = ERR_INVALID;
		for (int k = 0; rc == 0 && k < PK_KINDS; k++)
			if (grp->prog[k])
				rc = gpu_pack_program_sync(grp->prog[k]);
	}
	rc = rc ? rc : keep_list(pack, fits, n);
	free(gof);
	free(sof);
	free(stays);
	free(newcomer);
	return rc;
}

/*
 * Runs the programs of one kind for the fits whose flag is set: each
 * group's packed program with its mask written, or a lone fit's own
 * program; all in as few submissions as gpu_programs_run takes.
 */
/* Runs each group's program of the kind for the fits flagged, in batches
 * of 64 a submission; with async the last batch is left running
 * (pack->running), for finish_kind to wait for. */
static int run_kind_as(struct nn_pack *pack, enum pack_program kind,
		       const int *flag, int async)
{
	struct gpu_program *batch[64];
	int nbatch = 0, rc = 0;
	for (int g = 0; rc == 0 && g < pack->ngroups; g++) {
		struct pack_group *grp = &pack->groups[g];
		struct gpu_program *prog = NULL;
		int any = 0, used = 0;
		uint32_t *mask = grp->mask.mapped;
		for (int s = 0; s < grp->n; s++) {
			int on = grp->index[s] >= 0 && flag[grp->index[s]];
			any |= on;
			if (on)
				used = s + 1;
			if (mask)
				mask[s] = (uint32_t)on;
		}
		if (!any)
			continue;
		prog = grp->prog[PK_EPOCH] ? grp->prog[kind]
					   : own_program(first_fit(grp), kind);
		if (!prog)
			continue;
		if (grp->prog[PK_EPOCH])
			rc = gpu_pack_program_use(prog, used);
		if (rc)
			break;
		batch[nbatch++] = prog;
		if (nbatch == 64) {
			rc = gpu_programs_run(batch, nbatch);
			nbatch = 0;
		}
	}
	/* each group has its own mask, written above before its program
	 * runs */
	if (rc == 0 && nbatch && async) {
		rc = gpu_programs_start(batch, nbatch);
		if (rc == 0) {
			memcpy(pack->running, batch, sizeof(*batch) * nbatch);
			pack->nrunning = nbatch;
		}
	} else if (rc == 0 && nbatch) {
		rc = gpu_programs_run(batch, nbatch);
	}
	return rc;
}

static int run_kind(struct nn_pack *pack, enum pack_program kind,
		    const int *flag)
{
	return run_kind_as(pack, kind, flag, 0);
}

/* Waits for what run_kind_as left running. */
static int finish_kind(struct nn_pack *pack)
{
	int n = pack->nrunning;
	pack->nrunning = 0;
	return n ? gpu_programs_finish(pack->running, n) : 0;
}

void nn_pack_forget(struct nn_pack *pack, const struct nn_fit *fit)
{
	if (!pack || !fit)
		return;
	for (int j = 0; j < pack->nfits; j++)
		if (pack->fits[j] == fit) {
			pack->fits[j] = NULL;
			pack->serials[j] = 0;
		}
	for (int g = 0; g < pack->ngroups; g++) {
		struct pack_group *grp = &pack->groups[g];
		for (int s = 0; s < grp->n; s++)
			if (grp->fits[s] == fit) {
				grp->fits[s] = NULL; /* a free slot */
				grp->index[s] = -1;  /* off in run_kind */
				grp->live--;
			}
	}
}

int nn_pack_holds(const struct nn_pack *pack, const struct nn_fit *fit,
		  int hint)
{
	return place_of(pack, fit, hint) >= 0;
}

int nn_pack_render(struct nn_pack *pack, struct nn_fit *const *fits, int n,
		   const int *flag)
{
	int *on = calloc((size_t)pack->nfits + 1, sizeof(*on));
	int rc = on ? 0 : ERR_NOMEM;
	for (int i = 0; rc == 0 && i < n; i++) {
		if (!flag[i])
			continue;
		int j = place_of(pack, fits[i], i);
		if (j < 0)
			rc = ERR_INVALID;
		else
			on[j] = 1;
	}
	for (int g = 0; rc == 0 && g < pack->ngroups; g++) {
		struct pack_group *grp = &pack->groups[g];
		if (grp->prog[PK_EPOCH] && !grp->prog[PK_RENDER])
			rc = record_kind(pack, grp, PK_RENDER);
	}
	rc = rc ? rc : run_kind(pack, PK_RENDER, on);
	free(on);
	return rc;
}

int nn_pack_step(struct nn_pack *pack, struct nn_fit *const *fits, int n,
		 struct nn_metrics *m, int *rcs)
{
	struct nn_step *st = calloc((size_t)n + 1, sizeof(*st));
	int *on = calloc((size_t)n + 1, sizeof(*on));
	int rc = st && on ? 0 : ERR_NOMEM;

	double t0 = clock_ms(), t1;
	memset(pack->host_ms, 0, sizeof(pack->host_ms));
#define PHASE(k) (t1 = clock_ms(), pack->host_ms[k] += t1 - t0, t0 = t1)
	for (int i = 0; rc == 0 && i < n; i++) {
		memset(&m[i], 0, sizeof(m[i]));
		rcs[i] = nn_step_begin(fits[i], &st[i]);
		st[i].packed = 1;
		rcs[i] = rcs[i] ? rcs[i] : nn_fit_record_renders(fits[i]);
		on[i] = rcs[i] == 0;
	}
	if (rc == 0 && !same_list(pack, fits, n) &&
	    update_groups(pack, fits, n))
		rc = build_groups(pack, fits, n);
	if (rc) {
		free_groups(pack); /* rebuilt next time */
		goto out;
	}

	PHASE(NN_PACK_BEGIN);
	rc = run_kind(pack, PK_EPOCH, on);
	PHASE(NN_PACK_EPOCH_RUN);
	for (int i = 0; rc == 0 && i < n; i++) {
		if (!on[i])
			continue;
		rcs[i] = nn_step_measure(fits[i], &st[i], &m[i]);
		on[i] = rcs[i] == 0;
	}
	PHASE(NN_PACK_MEASURE);
	/* while the optimizer runs, the host's part of each fit's step that
	 * does not wait for it (the best model's epoch, the metrics) */
	rc = rc ? rc : run_kind_as(pack, PK_OPTIM, on, 1);
	int any_due = 0;
	for (int i = 0; rc == 0 && i < n; i++) {
		if (!on[i])
			continue;
		nn_step_applied(fits[i], &st[i], &m[i]);
		any_due |= nn_step_average_due(fits[i], &st[i]);
	}
	int frc = finish_kind(pack);
	rc = rc ? rc : frc;
	PHASE(NN_PACK_OPTIM_RUN);
	if (rc)
		goto out;

	if (any_due) {
		int *due = calloc((size_t)n, sizeof(*due));
		rc = due ? 0 : ERR_NOMEM;
		for (int i = 0; rc == 0 && i < n; i++)
			due[i] = on[i] && nn_step_average_due(fits[i], &st[i]);
		rc = rc ? rc : run_kind(pack, PK_AVG_RENDER, due);
		int any_keep = 0;
		for (int i = 0; rc == 0 && i < n; i++) {
			if (due[i])
				due[i] =
				    nn_step_average_measured(fits[i], &m[i]);
			any_keep |= due[i];
		}
		if (rc == 0 && any_keep)
			rc = run_kind(pack, PK_KEEP_AVG, due);
		for (int i = 0; rc == 0 && i < n; i++)
			if (due[i])
				nn_step_average_kept(fits[i], &st[i], &m[i]);
		free(due);
	}
	for (int i = 0; rc == 0 && i < n; i++)
		if (on[i])
			rcs[i] = nn_step_end(fits[i], &st[i], &m[i]);
	PHASE(NN_PACK_AFTER);
#undef PHASE
out:
	free(st);
	free(on);
	return rc;
}
