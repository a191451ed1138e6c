/*
 * cmd-completion.c - `vkinrctl completion bash|zsh`: a shell completion
 * script made from the command table, so it never lags behind it.
 * `make install` installs both where bash-completion and zsh look.
 *
 * The script completes the command (the first word), job and batch ids
 * for the commands that take them (asking `vkinrctl list --format
 * id,batch` at that moment), and files elsewhere.
 */
#include <string.h>

#include "client.h"

/* The commands that take job or batch ids. */
static const char *const takes_ids[] = { "list",    "show",   "watch",   "wait",
					 "pause",   "resume", "cancel",  "rm",
					 "renice",  "export", "metrics", "plot",
					 "preview", NULL };

static void print_words(FILE *out, int ids_only)
{
	const char *sep = "";

	for (int i = 0; cmd_table[i]; i++) {
		int id = 0;
		for (int k = 0; takes_ids[k]; k++)
			id |= !strcmp(takes_ids[k], cmd_table[i]->name);
		if (ids_only && !id)
			continue;
		fprintf(out, "%s%s", sep, cmd_table[i]->name);
		sep = " ";
	}
}

static void print_bash(FILE *out)
{
	fputs("# bash completion for vkinrctl (made by `vkinrctl completion "
	      "bash`)\n_vkinrctl() {\n\tlocal cur=${COMP_WORDS[COMP_CWORD]} "
	      "cmd=\"\" w\n\tfor w in \"${COMP_WORDS[@]:1:COMP_CWORD-1}\"; do"
	      "\n\t\tcase $w in -*) ;; *) cmd=$w; break ;; esac\n\tdone\n"
	      "\tif [ -z \"$cmd\" ]; then\n\t\tCOMPREPLY=($(compgen -W \"",
	      out);
	print_words(out, 0);
	fputs(" --json --socket --help --version\" -- \"$cur\"))\n\t\treturn\n"
	      "\tfi\n\tcase \" ",
	      out);
	print_words(out, 1);
	fputs(" \" in\n\t*\" $cmd \"*)\n\t\tCOMPREPLY=($(compgen -W \"$("
	      "vkinrctl list --format id,batch 2>/dev/null | awk 'NR > 1 "
	      "{ print $1; if ($2 != \"-\") print $2 }' | sort -u)\" -- "
	      "\"$cur\"))\n\t\t;;\n\t*)\n\t\tCOMPREPLY=($(compgen -f -- "
	      "\"$cur\"))\n\t\t;;\n\tesac\n}\ncomplete -o filenames -F "
	      "_vkinrctl vkinrctl\n",
	      out);
}

static void print_zsh(FILE *out)
{
	fputs("#compdef vkinrctl\n# zsh completion for vkinrctl (made by "
	      "`vkinrctl completion zsh`)\n_vkinrctl() {\n\tlocal -a cmds ids"
	      "\n\tcmds=(",
	      out);
	for (int i = 0; cmd_table[i]; i++) {
		fprintf(out, "%s'%s:", i ? " " : "", cmd_table[i]->name);
		for (const char *p = cmd_table[i]->summary; *p; p++)
			if (*p == '\'')
				fputs("'\\''",
				      out); /* ' closes, \' is one, ' opens */
			else if (*p == ':')
				fputs("\\:", out);
			else
				fputc(*p, out);
		fputc('\'', out);
	}
	fputs(")\n\tif (( CURRENT == 2 )); then\n\t\t_describe 'command' "
	      "cmds\n\t\treturn\n\tfi\n\tcase \" ",
	      out);
	print_words(out, 1);
	fputs(" \" in\n\t*\" ${words[2]} \"*)\n\t\tids=(${(f)\"$(vkinrctl "
	      "list --format id,batch 2>/dev/null | awk 'NR > 1 { print $1; "
	      "if ($2 != \"-\") print $2 }' | sort -u)\"})\n\t\t_describe "
	      "'job or batch' ids\n\t\t_files\n\t\t;;\n\t*)\n\t\t_files\n\t"
	      "\t;;\n\tesac\n}\n_vkinrctl \"$@\"\n",
	      out);
}

static int cmd_completion_exec(struct client *cl, const struct cmd_entry *self,
			       int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	if (optind + 1 != argc)
		return cmd_usage_error(self, "name the shell: bash or zsh");
	if (!strcmp(argv[optind], "bash"))
		print_bash(stdout);
	else if (!strcmp(argv[optind], "zsh"))
		print_zsh(stdout);
	else
		return cmd_usage_error(self, "bash or zsh, not '%s'",
				       argv[optind]);
	return CLIENT_EXIT_OK;
}

const struct cmd_entry cmd_completion_entry = {
	.name = "completion",
	.alias = NULL,
	.args = "bash|zsh",
	.summary = "print a shell completion script",
	.help = "make install puts them in place; by hand:\n"
		"  source <(vkinrctl completion bash)\n",
	.exec = cmd_completion_exec,
};
