package desktop

import (
	"image"
	"image/color"
	"image/draw"
	"strconv"
)

// digits is a 3x5 bitmap font for the ids drawn on a screenshot: each
// digit is five rows of three bits, the high bit on the left.
var digits = [10][5]uint8{
	{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
	{7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7},
}

// markColours cycle so that neighbouring boxes are told apart.
var markColours = []color.RGBA{
	{230, 25, 75, 255}, {60, 180, 75, 255}, {0, 130, 200, 255}, {245, 130, 48, 255},
	{145, 30, 180, 255}, {0, 128, 128, 255}, {170, 110, 40, 255}, {128, 0, 0, 255},
}

const fontScale = 2 // each font pixel is 2x2 screen pixels

// mark is a box to draw, in the image's coordinates.
type mark struct {
	id  int
	box image.Rectangle
}

// annotate draws each mark's box and its id (set-of-marks) on img, and
// returns the ids drawn: those whose box is in the image.
func annotate(img draw.Image, marks []mark) []int {
	b := img.Bounds()
	drawn := make([]int, 0, len(marks))
	for i, m := range marks {
		c := markColours[i%len(markColours)]
		r := m.box.Intersect(b)
		if r.Empty() {
			continue
		}
		drawn = append(drawn, m.id)
		outline(img, r, c)
		label := strconv.Itoa(m.id)
		w := len(label)*4*fontScale + fontScale
		h := 5*fontScale + 2*fontScale
		// The label sits on the box's top-left corner, inside the image.
		lx, ly := r.Min.X, r.Min.Y
		if lx+w > b.Max.X {
			lx = b.Max.X - w
		}
		if ly+h > b.Max.Y {
			ly = b.Max.Y - h
		}
		bg := image.Rect(lx, ly, lx+w, ly+h).Intersect(b)
		draw.Draw(img, bg, &image.Uniform{c}, image.Point{}, draw.Src)
		for j, ch := range label {
			drawDigit(img, int(ch-'0'), lx+fontScale+j*4*fontScale, ly+fontScale, color.RGBA{255, 255, 255, 255})
		}
	}
	return drawn
}

func outline(img draw.Image, r image.Rectangle, c color.RGBA) {
	u := &image.Uniform{c}
	for _, e := range []image.Rectangle{
		{r.Min, image.Pt(r.Max.X, r.Min.Y+2)}, {image.Pt(r.Min.X, r.Max.Y-2), r.Max},
		{r.Min, image.Pt(r.Min.X+2, r.Max.Y)}, {image.Pt(r.Max.X-2, r.Min.Y), r.Max},
	} {
		draw.Draw(img, e.Intersect(r), u, image.Point{}, draw.Src)
	}
}

func drawDigit(img draw.Image, d, x, y int, c color.RGBA) {
	for row, bits := range digits[d] {
		for col := range 3 {
			if bits&(4>>col) == 0 {
				continue
			}
			px := image.Rect(x+col*fontScale, y+row*fontScale, x+(col+1)*fontScale, y+(row+1)*fontScale)
			draw.Draw(img, px.Intersect(img.Bounds()), &image.Uniform{c}, image.Point{}, draw.Src)
		}
	}
}
