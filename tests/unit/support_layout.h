/*
 * support_layout.h - what the tests of the model and of its reference
 * share: the tensors of a layout (struct nn_layout) by name, in the order
 * of the flat parameter vector.
 */
#ifndef VKINR_TEST_SUPPORT_LAYOUT_H
#define VKINR_TEST_SUPPORT_LAYOUT_H

#include <stddef.h>

#include "nn/model.h"

struct test_tensor {
	char name[24];
	size_t offset, count;
};

#define TEST_MAX_TENSORS (2 + 3 * NN_MAX_BLOCKS + 2)

/* Every tensor of the layout, in the order of the flat vector; returns
 * how many (TEST_MAX_TENSORS at most). */
int test_layout_tensors(const struct nn_layout *l, struct test_tensor *out);

#endif
