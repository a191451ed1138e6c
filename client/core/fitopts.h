/*
 * fitopts.h - the table of training options (proto/params.h) as vkinrctl
 * options, for every way of submitting a fit: `vkinrctl submit` (to the
 * daemon, cmd-submit.c) and `vkinrctl submit --slurm` (to vkinrd
 * --fit-task, cmd-slurm.c). One option per row, each checked with the
 * table's own sentence, so both paths take the same options and refuse a
 * bad value alike, as job.submit and vkinrd --fit do.
 */
#ifndef VKINR_FITOPTS_H
#define VKINR_FITOPTS_H

#include <getopt.h>

#include "core/client.h"
#include "proto/params.h"

/* How many options fit_options_table writes. */
#define FIT_OPTION_COUNT PARAM_COUNT

/* Writes FIT_OPTION_COUNT options into opts: the table's rows with the
 * getopt values first + id. */
void fit_options_table(struct option *opts, int first);

/* One checked value. */
struct fit_value {
	enum param_id id;
	const char *key;    /* on the wire: "target_psnr" */
	const char *option; /* on the command line: "--target-psnr" */
	int is_text;        /* a word (schedule, dilations...), not a number */
	int is_auto;        /* "auto": the default, by width or device */
	double number;      /* the number, when neither */
};

/* Whether getopt's value c is one of the table's options. */
int fit_option_is(int c, int first);

/* Checks text for the option c; 0 with *v filled, or the usage error's
 * exit status (the sentence printed by cmd_usage_error). */
int fit_option_parse(const struct cmd_entry *e, int c, int first,
		     const char *text, struct fit_value *v);

/* --resize WxH (resize) or --max-side N as job.submit's "resize" in
 * common ({"width","height"} or {"max_side"}); 0, or the usage error's
 * exit status (a bad value, or both options). */
int fit_resize_option(const struct cmd_entry *self, int resize,
		      const char *text, cJSON *common);

#endif
