/*
 * cmd-help.c - `vkinrctl help [CMD]`: the list of commands, or one
 * command's help (what `vkinrctl CMD --help` prints), as git and docker
 * users expect.
 */
#include "core/client.h"

static int cmd_help_exec(struct client *cl, const struct cmd_entry *self,
			 int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd_entry *e;
	int c, rc;

	while ((c = cmd_getopt(argc, argv, "h", opts)) != -1)
		if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	if (optind >= argc) {
		cmd_print_usage(stdout);
		return CLIENT_EXIT_OK;
	}
	if (optind + 1 < argc)
		return cmd_usage_error(self, "one command at a time");
	if (!(e = cmd_find(argv[optind])))
		return cmd_usage_error(self, "there is no command '%s'",
				       argv[optind]);
	cmd_print_help(e, stdout);
	return CLIENT_EXIT_OK;
}

const struct cmd_entry cmd_help_entry = {
	.name = "help",
	.alias = NULL,
	.args = "[COMMAND]",
	.summary = "the commands, or one command's options",
	.help = "",
	.exec = cmd_help_exec,
};
