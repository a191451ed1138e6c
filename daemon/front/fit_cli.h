/*
 * fit_cli.h - `vkinrd --fit` and `vkinrd --devices`: the engine in the
 * foreground, with no socket (for clusters, benchmarks and tests).
 */
#ifndef VKINR_FIT_CLI_H
#define VKINR_FIT_CLI_H

/* Each returns the process exit status; argv as given to main. */
int fit_cli_run(int argc, char **argv);
int fit_cli_devices(int json);

#endif
