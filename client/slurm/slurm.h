/*
 * slurm.h - vkinrctl's dataset fits on a Slurm cluster (cmd-slurm.c):
 * `submit --slurm`, `list --out` and `wait --out`. Each is entered from
 * its command when that command sees the option, and parses the command
 * line itself; none talks to the daemon.
 */
#ifndef VKINR_CLIENT_SLURM_H
#define VKINR_CLIENT_SLURM_H

#include "core/client.h"

/* Whether argv (a command's, argv[0] its name) holds the option, alone
 * or as --opt=VALUE. */
int slurm_has_option(int argc, char **argv, const char *option);

int slurm_submit_exec(struct client *cl, const struct cmd_entry *self, int argc,
		      char **argv);
int slurm_list_exec(struct client *cl, const struct cmd_entry *self, int argc,
		    char **argv);
int slurm_wait_exec(struct client *cl, const struct cmd_entry *self, int argc,
		    char **argv);

#endif
