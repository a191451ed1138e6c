/*
 * fit_task.h - `vkinrd --fit-task`: one task of a dataset fit (a Slurm
 * array task), each image to its own folder, restartable. See fit_task.c.
 */
#ifndef VKINR_FIT_TASK_H
#define VKINR_FIT_TASK_H

/* The exit status after a stop signal, once the checkpoint is written:
 * the batch script requeues the task (EX_TEMPFAIL). */
#define FIT_TASK_INTERRUPTED 75

/* Returns the process exit status: 0 every image done or skipped, 1 any
 * failed (or the device did), 2 a usage error, FIT_TASK_INTERRUPTED. */
int fit_task_run(int argc, char **argv);

#endif
