#!/usr/bin/python3
"""mkdataset.py OUT N SIZE - N crops of SIZE x SIZE from real photographs
(Debian's plasma-workspace-wallpapers), scaled down first so that a crop
holds a scene rather than a texture: the datasets of `make bench-dataset`.
Needs python3-pil (Debian's interpreter, /usr/bin/python3)."""
import glob, os, random, sys

from PIL import Image

out, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
photos = sorted(p for p in glob.glob("/usr/share/wallpapers/*/contents/images/*")
                if p.endswith((".jpg", ".png")))
if not photos:
    sys.exit("mkdataset.py: no wallpapers (apt-get install plasma-workspace-wallpapers)")
os.makedirs(out, exist_ok=True)
rng = random.Random(size)
opened = {}
for i in range(n):
    path = photos[i % len(photos)]
    if path not in opened:
        img = Image.open(path).convert("RGB")
        scale = max(size * 4 / min(img.size), 0.05)
        opened[path] = img.resize((max(size, int(img.width * scale)),
                                   max(size, int(img.height * scale))))
    img = opened[path]
    x = rng.randrange(0, img.width - size + 1)
    y = rng.randrange(0, img.height - size + 1)
    img.crop((x, y, x + size, y + size)).save(os.path.join(out, "img%05d.png" % i))
