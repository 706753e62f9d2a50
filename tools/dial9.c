// SPDX-License-Identifier: MIT
/*
 * dial9.c - the dial9 command: one subcommand per file (cmd_*.c),
 * built on the public library API and the library's text helpers
 * (lib/common/text.h); what the subcommands share is in cli_*.c.
 */
#include <string.h>

#include "cli.h"
#include "common/grow.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "dump", cmd_dump, "dump [--sorted] TRACE...\n"
			    "                                 events as JSON lines" },
	{ "export", cmd_export, "export --perfetto [-o FILE] TRACE...\n"
				"                                 Chrome trace JSON for Perfetto UI / chrome://tracing" },
	{ "fetch", cmd_fetch, "fetch s3://BUCKET[/PREFIX] [--service S] [--host H] [--since T] [--until T]\n"
			      "            [--summaries] [--key KEY]... -o DIR [--endpoint URL] [--region R]\n"
			      "                                 download uploaded segments (dial9 ls's selection)" },
	{ "flame", cmd_flame, "flame [--on-cpu] [--tid N] [--span NAME] [--from T] [--to T] [--svg] [-o FILE] TRACE...\n"
			      "                                 off-CPU time by blocked stack (or the CPU profile), folded or SVG" },
	{ "fleet", cmd_fleet, "fleet (DIR | s3://BUCKET[/PREFIX]) [--since T] [--until T]\n"
			      "            [--by thread|service|host|host,service] [--sort p99|max|total]\n"
			      "            [--top N] [--service S] [--host H] [--json]\n"
			      "            [--fetch DIR] [--keep DIR] [--endpoint URL] [--region R] [--max-rows N] [--per-host]\n"
			      "                                 worst threads, services, hosts by runqueue delay (summaries)" },
	{ "info", cmd_info, "info TRACE...            metadata, counts, time range, losses" },
	{ "ls", cmd_ls, "ls s3://BUCKET[/PREFIX] [--service S] [--host H] [--since T] [--until T]\n"
			"            [--summaries] [--endpoint URL] [--region R] [--page-size N]\n"
			"                                 uploaded segments by their partition keys" },
	{ "record", cmd_record, "record [-o DIR] [--children] [--stacks] [--service NAME] [--ring-kb N] [--cpu-hz N]\n"
				"            (-p PID... | -- CMD [ARGS])\n"
				"                                 scheduling of unmodified processes" },
	{ "report", cmd_report, "report --html [-o FILE] [--top N] TRACE...\n"
				"                                 one self-contained HTML page: timeline, histogram, worst delays" },
	{ "sched", cmd_sched, "sched [--tid N] [--min-delay US] [--top N] [--culprits] [--explain [--no-symbols]] [--json] TRACE...\n"
			      "                                 who waited for a CPU, how long, behind whom\n"
			      "  dial9 sched --live [-p PID]... [--threshold US] [--duration S]\n"
			      "                                 runqueue delays as they happen" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: dial9 COMMAND [ARGS]   (dial9 COMMAND --help: its options)\n\n"
		     "TRACE is a segment file or a directory searched for them.\n\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(out, "  dial9 %s\n", cmds[i].help);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("dial9 %s%s\n", DIAL9_VERSION_STRING,
		       DIAL9_S3 ? "" : " (without S3)");
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[1], cmds[i].name))
			continue;
		/* Names, paths and notes come from traces: no control
		 * character of theirs reaches a terminal.  Every command
		 * writes text (JSON, HTML, SVG, folded stacks, tables) but
		 * export, which may write a binary trace. */
		if (cli_safe_stdio(strcmp(argv[1], "export") != 0)) {
			fprintf(stderr, "dial9: out of memory\n");
			return 1;
		}
		return cmds[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "dial9: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
