/*
 * support_layout.c - a layout's tensors by name (support_layout.h).
 */
#include "unit/support_layout.h"

#include <stdio.h>

/* Every tensor of the layout, in the order of the flat vector. */
int test_layout_tensors(const struct nn_layout *l, struct test_tensor *out)
{
	size_t nf = (size_t)l->nf;
	int n = 0;

	out[n++] = (struct test_tensor){ "first_w", l->first_w, nf * 2 };
	out[n++] = (struct test_tensor){ "first_b", l->first_b, nf };
	for (int k = 0; k < l->nblocks; k++) {
		out[n] = (struct test_tensor){ "", l->dw[k], nf * 9 };
		snprintf(out[n++].name, sizeof(out[0].name), "dw[%d]", k);
		out[n] = (struct test_tensor){ "", l->pw_w[k], nf * nf };
		snprintf(out[n++].name, sizeof(out[0].name), "pw_w[%d]", k);
		out[n] = (struct test_tensor){ "", l->pw_b[k], nf };
		snprintf(out[n++].name, sizeof(out[0].name), "pw_b[%d]", k);
	}
	out[n++] = (struct test_tensor){ "out_w", l->out_w, 3 * nf };
	out[n++] = (struct test_tensor){ "out_b", l->out_b, 3 };
	return n;
}
