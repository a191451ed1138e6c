/*
 * params.h - the ranges of a job's numeric parameters, one table that
 * vkinrd (job.submit) and vkinrctl (submit's options) both check against,
 * so that a value the client lets through is one the daemon takes, and one
 * the engine can run: the same bounds, the same sentence.
 *
 * Each row: the id, the key on the wire, the command-line option, the
 * bounds, whether a bound is itself allowed, whether the value is a whole
 * number (and a multiple of what), and an example for the message. Add a
 * row here and both programs know the parameter's range.
 */
#ifndef VKINR_PARAMS_H
#define VKINR_PARAMS_H

#include <stddef.h>

enum {
	PARAM_INT = 1 << 0,      /* a whole number */
	PARAM_OPEN_MIN = 1 << 1, /* the minimum itself is refused */
	PARAM_OPEN_MAX = 1 << 2, /* the maximum itself is refused */
};

/* The engine's own bounds (daemon/nn/model.h uses these). */
#define LIMIT_WIDTH_MIN 16
#define LIMIT_WIDTH_MAX 1024
/* A job's name, source and key: bytes of UTF-8 without control
 * characters. */
#define LIMIT_NAME_BYTES 127
#define LIMIT_SOURCE_BYTES 1023
#define LIMIT_KEY_BYTES 64
/* The loss terms' weights: 0 (off) to this */
#define LIMIT_LOSS_WEIGHT 100

/*     id           key            option            min     max
 *     flags                          multiple example */
#define PARAM_LIST(X)                                                        \
	X(EPOCHS, "epochs", "--epochs", 1, 10000000, PARAM_INT, 1, "2000")   \
	X(WIDTH, "width", "--width", LIMIT_WIDTH_MIN, LIMIT_WIDTH_MAX,        \
	  PARAM_INT, 16, "64")                                               \
	X(LR, "lr", "--lr", 0, 1, PARAM_OPEN_MIN | PARAM_OPEN_MAX, 0,        \
	  "1e-4")                                                            \
	X(SEED, "seed", "--seed", 0, 9007199254740991.0, PARAM_INT, 1, "7")  \
	X(PRIORITY, "priority", "--priority", -100, 100, PARAM_INT, 1, "10") \
	X(TARGET_PSNR, "target_psnr", "--target-psnr", 0, 200,               \
	  PARAM_OPEN_MIN, 0, "30")                                           \
	X(WARMUP, "warmup", "--warmup", 0, 10000000, PARAM_INT, 1, "10")   \
	X(PLATEAU, "plateau", "--plateau", 0, 10000000, PARAM_INT, 1, "100") \
	X(LR_MIN, "lr_min", "--lr-min", 0, 1, 0, 0, "0.1")                   \
	X(HALF_LIFE, "half_life", "--half-life", 1, 10000000, PARAM_INT, 1,   \
	  "200")                                                             \
	X(EARLY_CYCLE, "early_cycle", "--early-cycle", 0, 10000000,          \
	  PARAM_INT, 1, "400")                                               \
	X(EMA_DECAY, "ema_decay", "--ema-decay", 0, 1,                        \
	  PARAM_OPEN_MIN | PARAM_OPEN_MAX, 0, "0.99")                        \
	X(SSIM, "ssim", "--ssim", 0, LIMIT_LOSS_WEIGHT, 0, 0, "0.1")          \
	X(GRAD, "grad", "--grad", 0, LIMIT_LOSS_WEIGHT, 0, 0, "0.5")          \
	X(CHROMA, "chroma", "--chroma", 0, LIMIT_LOSS_WEIGHT, 0, 0, "0.5")

enum param_id {
#define X(id, key, option, min, max, flags, multiple, example) PARAM_##id,
	PARAM_LIST(X)
#undef X
	PARAM_COUNT
};

struct param_limit {
	const char *key;     /* "target_psnr" */
	const char *option;  /* "--target-psnr" */
	double min, max;
	unsigned flags;
	int multiple;        /* whole numbers only: a multiple of this */
	const char *example;
};

extern const struct param_limit param_limits[PARAM_COUNT];

/*
 * 0 when v is in the parameter's range, else ERR_INVALID and, in err, a
 * sentence that names it as `what` (the key in quotes for the daemon, the
 * option for the client) and says what is allowed, e.g. "--width must be
 * a multiple of 16 from 16 to 1024, e.g. 64".
 */
int param_check(enum param_id id, double v, const char *what, char *err,
		size_t errlen);
/* The same for text (a command-line value); *v gets the number. */
int param_parse(enum param_id id, const char *text, const char *what,
		double *v, char *err, size_t errlen);

/*
 * The engine's parameters that are words: one of a few choices, or (no
 * choices) a list of dilations, 1 to LIMIT_DILATIONS whole numbers from 1
 * to LIMIT_DILATION, comma-separated. The same check on both sides.
 *     id          key          option         choices
 *     example */
#define LIMIT_DILATIONS 8
#define LIMIT_DILATION 64
#define TEXT_PARAM_LIST(X)                                                   \
	X(SCHEDULE, "schedule", "--schedule", "constant|cosine|linear|exp",  \
	  "cosine")                                                          \
	X(OPTIMIZER, "optimizer", "--optimizer", "adam|muon", "muon")        \
	X(AVERAGE, "average", "--average", "none|ema", "ema")                \
	X(PRECISION, "precision", "--precision", "auto|fp32|fp16", "fp32")   \
	X(DILATIONS, "dilations", "--dilations", NULL, "1,2,4,8")

enum text_param_id {
#define X(id, key, option, choices, example) TEXT_PARAM_##id,
	TEXT_PARAM_LIST(X)
#undef X
	TEXT_PARAM_COUNT
};

struct text_param {
	const char *key, *option;
	const char *choices; /* "a|b|c", or NULL for a list of dilations */
	const char *example;
};

extern const struct text_param text_params[TEXT_PARAM_COUNT];

/* 0 when v is allowed, else ERR_INVALID and a sentence in err naming the
 * parameter as what. */
int text_param_check(enum text_param_id id, const char *v, const char *what,
		     char *err, size_t errlen);

#endif
