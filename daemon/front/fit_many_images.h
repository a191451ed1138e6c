/*
 * fit_many_images.h - the images `vkinrd --fit` of several images (or a
 * folder) fits, gathered from its arguments, each with the name of its
 * outputs (fit_many_images.c); fit_many.c fits them.
 */
#ifndef VKINR_FIT_MANY_IMAGES_H
#define VKINR_FIT_MANY_IMAGES_H

/* The images to fit, each with the name of its outputs: a file named
 * alone by its base name without the suffix, a folder's images by their
 * path below it (sub/a of DIR/sub/a.png: OUT/sub/a.png). */
struct fit_many_images {
	char **paths, **names;
	int n, cap;
};

/* The images named: files as given, a folder standing for its .png,
 * .jpg, .jpeg and .webp files (sorted; with recursive its subfolders'
 * too, else the subfolders passed by are named on stderr). 0, or
 * ERR_NOMEM; im is freed by fit_many_images_free either way. */
int fit_many_images_gather(char **args, int nargs, int recursive,
			   struct fit_many_images *im);
void fit_many_images_free(struct fit_many_images *im);

#endif
