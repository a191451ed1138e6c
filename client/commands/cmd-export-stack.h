/*
 * cmd-export-stack.h - the stacked export of a batch's networks into one
 * safetensors file (cmd-export-stack.c), for cmd-export.c.
 */
#ifndef VKINR_CMD_EXPORT_STACK_H
#define VKINR_CMD_EXPORT_STACK_H

#include <cjson/cJSON.h>

struct client;

/* Exports the jobs ids (one architecture) into the stack file path
 * (never over a file without force); with out_json, adds stack, jobs and
 * bytes to it instead of saying what it wrote. 0 or an exit status. */
int export_stack(struct client *cl, const cJSON *ids, const char *path,
		 int force, cJSON *out_json);

#endif
