/*
 * fit_args.c - the front ends' one command-line parser (see fit_args.h):
 * their own options, then the table's, through one getopt_long loop.
 */
#include "front/fit_args.h"

#include <stdlib.h>
#include <string.h>

#include "front/cli_usage.h"

_Static_assert(PARAM_COUNT <= 64, "a bit of *given for each row");

/* Room for a front end's own options. */
#define OWN_MAX 32

/* The table's rows that the foreground takes: all but the queue's
 * priority. */
#define SKIP PARAM_QUEUE

/* The option of the table's row id: getopt's value FIRST + id. */
#define FIRST (FIT_ARGS_OWN + 512)

/* A table option's value set into cfg (a row outside the config into
 * job[id]); -1 when refused (the table's sentence, "vkinrd: --KEY must
 * be ...", said on stderr). */
static int apply_table(struct nn_config *cfg, double job[PARAM_COUNT], int id,
		       const char *value)
{
	char err[256];
	if (nn_option_set(cfg, id, value, param_table[id].option, err,
			  sizeof(err))) {
		fprintf(stderr, "vkinrd: %s\n", err);
		return -1;
	}
	if (!nn_option_in_config(id))
		job[id] = strcmp(value, "auto") ? strtod(value, NULL) : 0;
	return 0;
}

static const char *own_name(const struct option *own, int c)
{
	for (; own->name; own++)
		if (own->val == c)
			return own->name;
	return "?";
}

int fit_args_parse(const struct fit_args *a, int argc, char **argv,
		   struct nn_config *cfg, double *target_psnr, uint64_t *given)
{
	struct option all[OWN_MAX + PARAM_COUNT + 2];
	double job[PARAM_COUNT] = { 0 };
	char shorts[64];
	int n = 0, c;

	for (; a->own[n].name && n < OWN_MAX; n++)
		all[n] = a->own[n];
	all[n++] = (struct option){ "help", no_argument, 0, 'h' };
	for (int i = 0; i < PARAM_COUNT; i++)
		if (!(param_table[i].flags & SKIP))
			all[n++] =
			    (struct option){ param_table[i].option + 2,
					     required_argument, 0, FIRST + i };
	all[n] = (struct option){ 0, 0, 0, 0 };
	snprintf(shorts, sizeof(shorts), "%sh", a->shorts);

	nn_config_defaults(cfg, 0);
	cfg->nf = 0; /* auto: the device's, once it is open */
	*given = 0;
	optind = 1;
	if (cli_help_asked(argc, argv)) { /* --fit --help: --fit's value */
		a->usage(stdout);
		exit(0);
	}
	while ((c = getopt_long(argc, argv, shorts, all, NULL)) != -1) {
		int rc = 0;
		if (c >= FIRST && c < FIRST + PARAM_COUNT) {
			if (apply_table(cfg, job, c - FIRST, optarg))
				goto usage_error;
			*given |= (uint64_t)1 << (c - FIRST);
			continue;
		}
		if (c == 'h') {
			a->usage(stdout);
			exit(0);
		}
		if (c == '?' || c == ':') {
			cli_suggest(argc, argv, all, NULL);
			goto usage_error;
		}
		rc = a->option(a->ctx, c, optarg);
		if (rc == -1)
			fprintf(stderr, "vkinrd: bad value \"%s\" for --%s\n",
				optarg, own_name(a->own, c));
		if (rc)
			goto usage_error;
	}
	*target_psnr = job[PARAM_TARGET_PSNR];
	return 0;
usage_error:
	return cli_short_usage(a->usage_line, a->help);
}
