/*
 * quota.h - the documented limits that tests may lower (never raise)
 * through environment variables, read once at first use:
 *
 *   VKINRD_MAX_CONNECTIONS          LIMIT_CONNECTIONS
 *   VKINRD_MAX_CONNECTIONS_PER_UID  LIMIT_CONNECTIONS_PER_UID
 *   VKINRD_MAX_JOBS_PER_UID         LIMIT_JOBS_PER_UID
 *   VKINRD_MAX_PARTIAL_BYTES_PER_UID  LIMIT_PARTIAL_BYTES_PER_UID
 *   VKINRD_MAX_PARTIAL_BYTES        LIMIT_PARTIAL_BYTES
 *   VKINRD_MAX_REQUESTS_PER_UID     LIMIT_REQUESTS_PER_UID
 *   VKINRD_DISK_BYTES_PER_UID       LIMIT_DISK_BYTES_PER_UID
 *   VKINRD_DISK_FILES_PER_UID       LIMIT_DISK_FILES_PER_UID
 *   VKINRD_FD_RESERVE               QUOTA_FD_RESERVE (0 to 16)
 *
 * A value that is not an integer from 1 to the compiled-in limit is
 * ignored. Loop thread only.
 */
#ifndef VKINR_QUOTA_H
#define VKINR_QUOTA_H

int quota_connections(void);
int quota_connections_per_uid(void);
int quota_jobs_per_uid(void);
int quota_partial_bytes_per_uid(void);
int quota_partial_bytes(void);
int quota_requests_per_uid(void);
long long quota_disk_bytes_per_uid(void);
int quota_disk_files_per_uid(void);

/* File descriptors kept for the daemon's own files (checkpoints, history,
 * logs, exports read back): a connection that would leave fewer free
 * under RLIMIT_NOFILE is refused. */
#define QUOTA_FD_RESERVE 16
/* The soft RLIMIT_NOFILE when a connection whose descriptor is fd would
 * eat into the reserve (every descriptor below fd is open: the kernel
 * gives the lowest free one), else 0. */
long quota_descriptors_short(int fd);

#endif
