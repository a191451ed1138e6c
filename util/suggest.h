/*
 * suggest.h - "did you mean": the nearest of a list of words to one that
 * matched none, for the commands and options both programs read.
 *
 * Near means an edit distance (insertions, deletions, substitutions, a
 * swap of two neighbours counting one) of at most 1 for words up to 4
 * letters and 2 beyond, so that a typo finds its word and a word of
 * another kind finds nothing.
 */
#ifndef VKINR_SUGGEST_H
#define VKINR_SUGGEST_H

#include <getopt.h>
#include <stddef.h>

/* The nearest of words (n of them, NULL ones skipped) to word, or NULL
 * when none is near. */
const char *suggest_word(const char *word, const char *const *words, size_t n);

/* For an option getopt did not recognise (arg as on the command line,
 * "--epoch=3" or "--devcies"): the name of the nearest long option of
 * opts (ended by a zero entry), or NULL when none is near or arg is no
 * long option, or one that is a prefix of an option (getopt said that it
 * is ambiguous or lacks its value). */
const char *suggest_option(const char *arg, const struct option *opts);

#endif
