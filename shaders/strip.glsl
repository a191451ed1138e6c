// strip.glsl - what the depthwise passes by strips share
// (dwconv_strip.comp, dwconv_back_strip.comp): the workgroup, SX columns
// by SY strips (DW_STRIP_X and DW_STRIP_Y in daemon/nn/passes.h), and
// where a strip lies. Strip s of a channel takes the residue s % d of the
// rows, and its (s / d)-th run of STRIP rows of that residue (DW_STRIP):
// the rows y0, y0 + d, ..., y0 + (STRIP - 1) d. There are
// d * ceil(ceil(th / d) / STRIP) strips (dw_strips() in daemon/nn/record.h).
// SX and SY: a variant's defines may set them (the "_x16" variants of
// small planes: 16 x 4, see record.c)
#ifndef SX
#define SX 32
#define SY 8
#endif
#define STRIP 8

// The first row of strip s for dilation d.
int strip_row0(int s, int d)
{
	int run = s / d;
	return run * STRIP * d + (s - run * d);
}
