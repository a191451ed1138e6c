/*
 * cmd-completion.c - `vkinrctl completion bash|zsh|fish`: a shell
 * completion script made from the command table and from each command's
 * own option table (cmd_options), so it never lags behind either.
 * `make install` installs them where bash-completion, zsh and fish look.
 *
 * The scripts complete the command (the first word), each command's long
 * options, the value of --state (the six states) and of --after (jobs),
 * job ids, batch ids and job names for the commands that take jobs (asking
 * `vkinrctl list --csv --no-header --format id,batch,name` at that
 * moment), commands for `help`, shells for `completion`, and files only
 * where files are taken (submit, infer, and the values of options that
 * name a file).
 */
#include <string.h>

#include "core/client.h"

/* What the words after a command are. */
enum kind { K_NONE, K_IDS, K_FILES, K_COMMANDS, K_SHELLS };

static const struct {
	const char *name;
	enum kind kind;
} kinds[] = {
	{ "show", K_IDS },      { "watch", K_IDS },
	{ "wait", K_IDS },      { "pause", K_IDS },
	{ "resume", K_IDS },    { "cancel", K_IDS },
	{ "rm", K_IDS },        { "retry", K_IDS },
	{ "renice", K_IDS },    { "export", K_IDS },
	{ "metrics", K_IDS },   { "plot", K_IDS },
	{ "preview", K_IDS },   { "logs", K_IDS },
	{ "submit", K_FILES },  { "infer", K_FILES },
	{ "help", K_COMMANDS }, { "completion", K_SHELLS },
};

static const char *const kind_words[] = { "none", "ids", "files", "commands",
					  "shells" };

static enum kind kind_of(const char *name)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].name, name))
			return kinds[i].kind;
	return K_NONE;
}

#define GLOBAL_OPTIONS "--json --socket --call-timeout --help --version"
#define STATES "queued running paused done failed cancelled"
/* job ids, batch ids and names, one a line */
#define IDS_COMMAND                                                            \
	"vkinrctl list --csv --no-header --format id,batch,name 2>/dev/null "  \
	"| tr , '\\n' | grep -vx -- - | sort -u"

/* The command's long options ("--a --b"), or those taking a value. */
static void print_options(FILE *out, const struct option *o, int with_value)
{
	const char *sep = "";

	for (; o && o->name; o++) {
		if (with_value && o->has_arg != required_argument)
			continue;
		fprintf(out, "%s--%s", sep, o->name);
		sep = " ";
	}
}

static void print_commands(FILE *out)
{
	for (int i = 0; cmd_table[i]; i++)
		fprintf(out, "%s%s", i ? " " : "", cmd_table[i]->name);
}

/* One "case" arm a command: its options, those that take a value, and
 * what its words are. */
static void print_arms(struct client *cl, FILE *out, const char *open,
		       const char *close)
{
	for (int i = 0; cmd_table[i]; i++) {
		const struct cmd_entry *e = cmd_table[i];
		const struct option *o = cmd_options(cl, e);
		fprintf(out, "\t%s%s%s%s%s)\n\t\topts=%s", open, e->name,
			e->alias ? "|" : "", e->alias ? e->alias : "", close,
			*open ? "(" : "\"");
		print_options(out, o, 0);
		o = cmd_options(cl, e); /* the same table, valid again */
		fprintf(out, "%s\n\t\targs=%s", *open ? ")" : "\"",
			*open ? "(" : "\"");
		print_options(out, o, 1);
		fprintf(out, "%s\n\t\tkind=%s\n\t\t;;\n", *open ? ")" : "\"",
			kind_words[kind_of(e->name)]);
	}
}

static void print_bash(struct client *cl, FILE *out)
{
	fputs("# bash completion for vkinrctl (made by `vkinrctl completion "
	      "bash`)\n_vkinrctl_ids() {\n\t" IDS_COMMAND "\n}\n"
	      "_vkinrctl() {\n\tlocal cur=${COMP_WORDS[COMP_CWORD]} "
	      "prev=${COMP_WORDS[COMP_CWORD-1]} cmd=\"\" i opts args kind\n"
	      "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n\t\tcase "
	      "${COMP_WORDS[i]} in\n\t\t--socket | --call-timeout) ((i++)) ;;"
	      "\n\t\t-*) ;;\n\t\t*) cmd=${COMP_WORDS[i]}; break ;;\n\t\tesac\n"
	      "\tdone\n\tif [ -z \"$cmd\" ]; then\n\t\tcase $prev in\n\t\t"
	      "--socket) compopt -o filenames 2>/dev/null; COMPREPLY=($("
	      "compgen -f -- \"$cur\")) ;;\n\t\t--call-timeout) ;;\n\t\t*) "
	      "COMPREPLY=($(compgen -W \"",
	      out);
	print_commands(out);
	fputs(" " GLOBAL_OPTIONS "\" -- \"$cur\")) ;;\n\t\tesac\n\t\treturn\n"
	      "\tfi\n\tcase $cmd in\n",
	      out);
	print_arms(cl, out, "", "");
	fputs(
	    "\t*) return ;;\n\tesac\n"
	    "\tif [[ \" $args \" == *\" $prev \"* ]]; then\n\t\tcase $prev in"
	    "\n\t\t--state) COMPREPLY=($(compgen -W \"" STATES "\" -- "
	    "\"$cur\")) ;;\n\t\t--after) COMPREPLY=($(compgen -W \"$("
	    "_vkinrctl_ids)\" -- \"$cur\")) ;;\n\t\t--format | --epochs | "
	    "--width | --lr | --seed | --priority | --name | --port | "
	    "--timeout) ;;\n\t\t*) compopt -o filenames 2>/dev/null; "
	    "COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n\t\tesac\n\t\treturn"
	    "\n\tfi\n\tif [[ $cur == -* ]]; then\n\t\tCOMPREPLY=($(compgen "
	    "-W \"$opts\" -- \"$cur\"))\n\t\treturn\n\tfi\n\tcase $kind in\n"
	    "\tids) COMPREPLY=($(compgen -W \"$(_vkinrctl_ids)\" -- \"$cur\"))"
	    " ;;\n\tfiles) compopt -o filenames 2>/dev/null; COMPREPLY=($("
	    "compgen -f -- \"$cur\")) ;;\n\tcommands) COMPREPLY=($(compgen "
	    "-W \"",
	    out);
	print_commands(out);
	fputs("\" -- \"$cur\")) ;;\n\tshells) COMPREPLY=($(compgen -W \"bash "
	      "zsh fish\" -- \"$cur\")) ;;\n\tesac\n}\ncomplete -F _vkinrctl "
	      "vkinrctl\n",
	      out);
}

/* text for a single-quoted word: ' as '\'' (zsh) or \' (fish); ':' as
 * \: for zsh's _describe */
static void print_quoted(FILE *out, const char *text, int fish)
{
	for (const char *p = text; *p; p++)
		if (*p == '\'')
			fputs(fish ? "\\'" : "'\\''", out);
		else if (*p == '\\' && fish)
			fputs("\\\\", out);
		else if (*p == ':' && !fish)
			fputs("\\:", out);
		else
			fputc(*p, out);
}

static void print_zsh(struct client *cl, FILE *out)
{
	fputs("#compdef vkinrctl\n# zsh completion for vkinrctl (made by "
	      "`vkinrctl completion zsh`)\n_vkinrctl() {\n\tlocal -a cmds "
	      "opts args\n\tlocal cmd='' kind i prev\n\tcmds=(",
	      out);
	for (int i = 0; cmd_table[i]; i++) {
		fprintf(out, "%s'%s:", i ? " " : "", cmd_table[i]->name);
		print_quoted(out, cmd_table[i]->summary, 0);
		fputc('\'', out);
	}
	fputs(")\n\tfor ((i = 2; i < CURRENT; i++)); do\n\t\tcase "
	      "${words[i]} in\n\t\t(--socket|--call-timeout) ((i++)) ;;\n\t\t"
	      "(-*) ;;\n\t\t(*) cmd=${words[i]}; break ;;\n\t\tesac\n\tdone\n"
	      "\tif [[ -z $cmd ]]; then\n\t\tif [[ ${words[CURRENT]} == -* ]];"
	      " then\n\t\t\tcompadd -- " GLOBAL_OPTIONS "\n\t\telse\n\t\t\t"
	      "_describe 'command' cmds\n\t\tfi\n\t\treturn\n\tfi\n"
	      "\tcase $cmd in\n",
	      out);
	print_arms(cl, out, "(", "");
	fputs("\t(*) return ;;\n\tesac\n\tprev=${words[CURRENT-1]}\n"
	      "\tif (( ${args[(Ie)$prev]} )); then\n\t\tcase $prev in\n"
	      "\t\t(--state) compadd -- " STATES " ;;\n\t\t(--after) compadd "
	      "-- ${(f)\"$(" IDS_COMMAND ")\"} ;;\n\t\t(--format|--epochs|"
	      "--width|--lr|--seed|--priority|--name|--port|--timeout) ;;\n"
	      "\t\t(*) _files ;;\n\t\tesac\n\t\treturn\n\tfi\n\tif [[ "
	      "${words[CURRENT]} == -* ]]; then\n\t\tcompadd -- $opts\n\t\t"
	      "return\n\tfi\n\tcase $kind in\n\t(ids) compadd -- "
	      "${(f)\"$(" IDS_COMMAND
	      ")\"} ;;\n\t(files) _files ;;\n\t(commands) "
	      "_describe 'command' cmds ;;\n\t(shells) compadd bash zsh fish "
	      ";;\n\tesac\n}\n_vkinrctl \"$@\"\n",
	      out);
}

static void print_fish(struct client *cl, FILE *out)
{
	fputs("# fish completion for vkinrctl (made by `vkinrctl completion "
	      "fish`)\nfunction __vkinrctl_ids\n\t" IDS_COMMAND "\nend\n"
	      "complete -c vkinrctl -f\n"
	      "complete -c vkinrctl -n __fish_use_subcommand -l json\n"
	      "complete -c vkinrctl -n __fish_use_subcommand -l socket -r -F\n"
	      "complete -c vkinrctl -n __fish_use_subcommand -l call-timeout "
	      "-x\n"
	      "complete -c vkinrctl -n __fish_use_subcommand -l help\n"
	      "complete -c vkinrctl -n __fish_use_subcommand -l version\n",
	      out);
	for (int i = 0; cmd_table[i]; i++) {
		const struct cmd_entry *e = cmd_table[i];
		const struct option *o;
		char when[96];
		enum kind k = kind_of(e->name);

		fprintf(out,
			"complete -c vkinrctl -n __fish_use_subcommand -a %s "
			"-d '",
			e->name);
		print_quoted(out, e->summary, 1);
		fputs("'\n", out);
		snprintf(when, sizeof(when),
			 "'__fish_seen_subcommand_from %s%s%s'", e->name,
			 e->alias ? " " : "", e->alias ? e->alias : "");
		for (o = cmd_options(cl, e); o && o->name; o++) {
			const char *value = "";
			if (o->has_arg == required_argument)
				value = !strcmp(o->name, "state")
					    ? " -x -a '" STATES "'"
					: !strcmp(o->name, "after")
					    ? " -x -a '(__vkinrctl_ids)'"
					    : " -r -F";
			fprintf(out, "complete -c vkinrctl -n %s -l %s%s\n",
				when, o->name, value);
		}
		if (k == K_IDS)
			fprintf(out,
				"complete -c vkinrctl -n %s -a "
				"'(__vkinrctl_ids)'\n",
				when);
		else if (k == K_FILES)
			fprintf(out, "complete -c vkinrctl -n %s -F\n", when);
		else if (k == K_SHELLS)
			fprintf(out,
				"complete -c vkinrctl -n %s -a 'bash zsh "
				"fish'\n",
				when);
		else if (k == K_COMMANDS) {
			fprintf(out, "complete -c vkinrctl -n %s -a '", when);
			print_commands(out);
			fputs("'\n", out);
		}
	}
}

static int cmd_completion_exec(struct client *cl, const struct cmd_entry *self,
			       int argc, char **argv)
{
	static const struct option opts[] = {
		CMD_COMMON_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	while ((c = cmd_getopt(argc, argv, "h", opts)) != -1)
		if ((rc = cmd_common_option(cl, self, c)) >= 0)
			return rc;
	if (optind + 1 != argc)
		return cmd_usage_error(self,
				       "name the shell: bash, zsh or fish");
	if (!strcmp(argv[optind], "bash"))
		print_bash(cl, stdout);
	else if (!strcmp(argv[optind], "zsh"))
		print_zsh(cl, stdout);
	else if (!strcmp(argv[optind], "fish"))
		print_fish(cl, stdout);
	else
		return cmd_usage_error(self, "bash, zsh or fish, not '%s'",
				       argv[optind]);
	return CLIENT_EXIT_OK;
}

const struct cmd_entry cmd_completion_entry = {
	.name = "completion",
	.alias = NULL,
	.args = "bash|zsh|fish",
	.summary = "print a shell completion script",
	.help = "make install puts them in place; by hand:\n"
		"  source <(vkinrctl completion bash)\n"
		"  vkinrctl completion fish | source\n"
		"It completes commands, each command's options, job ids, batch "
		"ids and job\nnames where jobs are taken, and files only where "
		"files are.\n",
	.exec = cmd_completion_exec,
};
