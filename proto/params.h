/*
 * params.h - every training option of a job, in one table that every
 * front end is built from: `vkinrctl submit` and `submit --slurm` (their
 * options and help), the wire method job.submit (its keys and checks),
 * `vkinrd --fit` and `vkinrd --fit-task` (their options and help), and
 * the engine's own check of a configuration (nn_config_check), which
 * finds each value in struct nn_config through the row's field. A value
 * one front end lets through is one every other takes, with the same
 * bounds and the same sentence.
 *
 * Each row: the id, the key on the wire (the option is the key with - for
 * _), the kind and bounds (a number: whether a bound is itself allowed,
 * whether it is a whole number and a multiple of what; a word: its
 * choices, or NULL for a list of dilations), an example for the messages,
 * the default as help shows it, the help line, and where the value lives:
 * CFG_*(f) a field of struct nn_config, REC_*(f) one of its recipe (saved
 * in checkpoints and request.json), JOB(f) one of the job alone (the
 * engine never sees it). Add a row here and every front end has the
 * option.
 */
#ifndef VKINR_PARAMS_H
#define VKINR_PARAMS_H

#include <stddef.h>
#include <stdio.h>

enum {
	PARAM_INT = 1 << 0,      /* a whole number */
	PARAM_OPEN_MIN = 1 << 1, /* the minimum itself is refused */
	PARAM_OPEN_MAX = 1 << 2, /* the maximum itself is refused */
	PARAM_WORD = 1 << 3,     /* a word or a list, not a number */
	/* "auto" on a command line: by width (or the device's width), the
	 * same as leaving the option out */
	PARAM_AUTO = 1 << 4,
	/* only for a job of the daemon's queue (not vkinrd --fit,
	 * --fit-task or Slurm) */
	PARAM_QUEUE = 1 << 5,
};

/* The engine's own bounds (daemon/nn/model.h uses these). */
#define LIMIT_WIDTH_MIN 16
#define LIMIT_WIDTH_MAX 1024
#define LIMIT_EPOCHS 10000000
/* A job's name, source and key: bytes of UTF-8 without control
 * characters. */
#define LIMIT_NAME_BYTES 127
#define LIMIT_SOURCE_BYTES 1023
#define LIMIT_KEY_BYTES 64
/* The loss terms' weights: 0 (off) to this */
#define LIMIT_LOSS_WEIGHT 100
/* A list of dilations: 1 to LIMIT_DILATIONS whole numbers from 1 to
 * LIMIT_DILATION, comma-separated */
#define LIMIT_DILATIONS 8
#define LIMIT_DILATION 64

#define PARAM_OPEN (PARAM_OPEN_MIN | PARAM_OPEN_MAX)

/* The numbers first, then the words: the order of the client's key of a
 * submission (--skip-done) and of job objects.
 *  id, key, option, flags, min, max, multiple, choices, example, default,
 *  help, field */
#define PARAM_LIST(X)                                                          \
	X(EPOCHS, "epochs", "--epochs", PARAM_INT, 1, LIMIT_EPOCHS, 1, NULL,   \
	  "2000", "1000", "epochs to train", CFG_INT(epochs))                  \
	X(WIDTH, "width", "--width", PARAM_INT | PARAM_AUTO, LIMIT_WIDTH_MIN,  \
	  LIMIT_WIDTH_MAX, 16, NULL, "64", "512 on a GPU, 64 on a CPU device", \
	  "network width", CFG_INT(nf))                                        \
	X(LR, "lr", "--lr", PARAM_OPEN | PARAM_AUTO, 0, 1, 0, NULL, "1e-4",    \
	  "by width: 6e-3 up to 32, 3e-3 at 128, 7.5e-4 at 512",               \
	  "peak learning rate", CFG_REAL(lr))                                  \
	X(SEED, "seed", "--seed", PARAM_INT, 0, 9007199254740991.0, 1, NULL,   \
	  "7", "0", "random seed of the initial weights", CFG_U64(seed))       \
	X(PRIORITY, "priority", "--priority", PARAM_INT | PARAM_QUEUE, -100,   \
	  1000, 1, NULL, "10", "0",                                            \
	  "higher runs first among your own jobs; above 100 (root only) "      \
	  "before everyone's",                                                 \
	  JOB(priority))                                                       \
	X(TARGET_PSNR, "target_psnr", "--target-psnr", PARAM_OPEN_MIN, 0, 200, \
	  0, NULL, "30", "none",                                               \
	  "stop early, as done, once an epoch reaches this PSNR (dB)",         \
	  JOB(target_psnr))                                                    \
	X(WARMUP, "warmup", "--warmup", PARAM_INT | PARAM_AUTO, 0,             \
	  LIMIT_EPOCHS, 1, NULL, "10", "50 at width 16, else 10",              \
	  "warmup epochs (not with constant)", REC_INT(warmup))                \
	X(PLATEAU, "plateau", "--plateau", PARAM_INT, 0, LIMIT_EPOCHS, 1,      \
	  NULL, "100", "0", "epochs at the peak rate after the warmup",        \
	  REC_INT(plateau))                                                    \
	X(LR_MIN, "lr_min", "--lr-min", 0, 0, 1, 0, NULL, "0.1", "0.1",        \
	  "the decay's floor, a fraction of lr", REC_REAL(lr_min_ratio))       \
	X(HALF_LIFE, "half_life", "--half-life", PARAM_INT, 1, LIMIT_EPOCHS,   \
	  1, NULL, "200", "200",                                               \
	  "exp: epochs that halve the rate above the floor",                   \
	  REC_INT(half_life))                                                  \
	X(EARLY_CYCLE, "early_cycle", "--early-cycle", PARAM_INT, 0,           \
	  LIMIT_EPOCHS, 1, NULL, "400", "400",                                 \
	  "cosine, linear: in jobs of 7.5 N epochs or more, a first decay "    \
	  "by epoch N, then the main one (0: none)",                           \
	  REC_INT(early_cycle))                                                \
	X(DECAY, "decay", "--decay", PARAM_INT, 0, LIMIT_EPOCHS, 1, NULL,      \
	  "2000", "2000",                                                      \
	  "cosine, linear: the main decay reaches the floor N epochs after "   \
	  "its start, then falls to a tenth of it by the end (0: the job)",    \
	  REC_INT(decay))                                                      \
	X(EMA_DECAY, "ema_decay", "--ema-decay", PARAM_OPEN, 0, 1, 0, NULL,    \
	  "0.99", "0.99", "the average's decay an epoch", REC_REAL(ema_decay)) \
	X(SSIM, "ssim", "--ssim", 0, 0, LIMIT_LOSS_WEIGHT, 0, NULL, "0.1",     \
	  "0", "weight of the loss term 1 - SSIM (11x11 window; 0: off)",      \
	  REC_REAL(loss_ssim))                                                 \
	X(GRAD, "grad", "--grad", 0, 0, LIMIT_LOSS_WEIGHT, 0, NULL, "0.5",     \
	  "0", "weight of the error's finite differences (0: off)",            \
	  REC_REAL(loss_grad))                                                 \
	X(CHROMA, "chroma", "--chroma", 0, 0, LIMIT_LOSS_WEIGHT, 0, NULL,      \
	  "0.5", "0.5", "weight of the error of R-G and B-G (0: off)",         \
	  REC_REAL(loss_chroma))                                               \
	X(SCHEDULE, "schedule", "--schedule", PARAM_WORD, 0, 0, 0,             \
	  "constant|cosine|linear|exp", "cosine", "cosine",                    \
	  "the rate's schedule (constant: as the PyTorch peer)",               \
	  REC_WORD(schedule))                                                  \
	X(OPTIMIZER, "optimizer", "--optimizer", PARAM_WORD, 0, 0, 0,          \
	  "adam|muon", "muon", "muon",                                         \
	  "muon: Muon on the pointwise weights, Adam on the rest",             \
	  REC_WORD(optimizer))                                                 \
	X(AVERAGE, "average", "--average", PARAM_WORD, 0, 0, 0, "none|ema",    \
	  "ema", "ema",                                                        \
	  "ema: export the better of the live and the averaged weights",       \
	  REC_WORD(average))                                                   \
	X(PRECISION, "precision", "--precision", PARAM_WORD, 0, 0, 0,          \
	  "auto|fp32|fp16", "fp32", "auto",                                    \
	  "auto: fp16 tensor cores where the device has them, fp32 for the "   \
	  "last twentieth of the epochs",                                      \
	  CFG_WORD(precision))                                                 \
	X(DILATIONS, "dilations", "--dilations", PARAM_WORD, 0, 0, 0, NULL,    \
	  "1,2,4,8", "1,2,4,8", "the blocks' dilations", CFG_LIST(dilations))

enum param_id {
#define X(id, key, option, flags, min, max, multiple, choices, example,        \
	  fallback, help, field)                                               \
	PARAM_##id,
	PARAM_LIST(X)
#undef X
	    PARAM_COUNT
};
/* The first word: rows from here on are words. */
#define PARAM_FIRST_WORD PARAM_SCHEDULE
#define PARAM_WORD_COUNT (PARAM_COUNT - PARAM_FIRST_WORD)

struct param {
	const char *key;    /* "target_psnr" */
	const char *option; /* "--target-psnr" */
	unsigned flags;
	double min, max;     /* numbers */
	int multiple;        /* whole numbers only: a multiple of this */
	const char *choices; /* words: "a|b|c", NULL for a list of dilations */
	const char *example;
	const char *fallback; /* the default, as help says it */
	const char *help;
};

extern const struct param param_table[PARAM_COUNT];

/* The row whose key (or option without "--", - for _) is name, or -1. */
int param_find(const char *name);

/*
 * 0 when v is in the number's range, else ERR_INVALID and, in err, a
 * sentence that names it as `what` (the key in quotes for the daemon, the
 * option for the command lines) and says what is allowed, e.g. "--width
 * must be a multiple of 16 from 16 to 1024, e.g. 64 (got 8)".
 */
int param_check(enum param_id id, double v, const char *what, char *err,
		size_t errlen);
/* 0 when the word v is allowed, else ERR_INVALID and a sentence. */
int param_check_word(enum param_id id, const char *v, const char *what,
		     char *err, size_t errlen);
/* A command-line value: a number (*v gets it) or a word, checked; 1 for
 * "auto" where the row takes it (*v untouched), else 0 or ERR_INVALID
 * with the sentence. */
int param_parse(enum param_id id, const char *text, const char *what, double *v,
		char *err, size_t errlen);
/* The index of word v in the row's choices (the engine's enum), or -1. */
int param_choice(enum param_id id, const char *v);
/* The i-th choice of the row into buf ("" past the last). */
void param_choice_name(enum param_id id, int i, char *buf, size_t len);

/*
 * The help of every row whose flags have none of the bits in skip: one
 * "  --OPTION ARG  help (default ...)" a row, folded to 80 columns.
 */
void param_print_help(FILE *out, unsigned skip);

#endif
