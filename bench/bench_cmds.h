/* SPDX-License-Identifier: MIT */
/* Entry points of shmlog-bench's subcommands: argv[0] is the command name. */
#ifndef SHMLOG_BENCH_CMDS_H
#define SHMLOG_BENCH_CMDS_H
int bench_log_main(int argc, char **argv);
int bench_ipc_main(int argc, char **argv);
int bench_disabled_main(int argc, char **argv);
int bench_eventloop_main(int argc, char **argv);
int bench_faults_main(int argc, char **argv);
int bench_forward_main(int argc, char **argv);
#endif
