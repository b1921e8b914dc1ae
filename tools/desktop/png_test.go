package desktop

import (
	"bytes"
	"fmt"
	"hash/adler32"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math/rand/v2"
	"testing"

	"github.com/saucerhq/saucer/internal/cputime"
)

// controlsImage draws a window of n buttons with their marks, like a
// screenshot: flat areas, edges, digits.
func controlsImage(w, h, n int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), &image.Uniform{color.RGBA{0xf6, 0xf5, 0xf4, 0xff}}, image.Point{}, draw.Src)
	var marks []mark
	for i := range n {
		x, y := 10+(i%20)*(w-20)/20, 10+(i/20)*30
		r := image.Rect(x, y, x+(w-20)/20-4, y+26)
		draw.Draw(img, r, &image.Uniform{color.RGBA{0xe0, 0xe0, 0xe0, 0xff}}, image.Point{}, draw.Src)
		marks = append(marks, mark{i + 1, r})
	}
	annotate(img, marks)
	return img
}

// TestEncodePNG: the fast encoder's PNG decodes to the same pixels, for a
// screenshot-like image, noise, a part of a larger image, and an image
// that is not opaque (which image/png encodes).
func TestEncodePNG(t *testing.T) {
	noise := image.NewRGBA(image.Rect(0, 0, 97, 61))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise.Pix {
		noise.Pix[i] = byte(rng.IntN(256))
		if i%4 == 3 {
			noise.Pix[i] = 0xff
		}
	}
	controls := controlsImage(640, 400, 200)
	translucent := image.NewRGBA(image.Rect(0, 0, 8, 8))
	translucent.Pix[3] = 0x80
	for name, img := range map[string]*image.RGBA{
		"controls":    controls,
		"noise":       noise,
		"part":        controls.SubImage(image.Rect(33, 17, 301, 222)).(*image.RGBA),
		"one pixel":   controls.SubImage(image.Rect(5, 5, 6, 6)).(*image.RGBA),
		"translucent": translucent,
	} {
		checkPNG(t, name, img)
	}
	// The stripes join into one stream whatever their number (image/png
	// checks the stream's Adler-32 too).
	for _, n := range []int{1, 2, 6} {
		b, err := encodePNGIn(controls, n)
		if err != nil {
			t.Fatal(err)
		}
		checkDecodes(t, fmt.Sprintf("controls in %d stripes", n), controls, b)
	}
}

// checkPNG encodes img and checks that its PNG decodes to the same pixels.
func checkPNG(t *testing.T, name string, img *image.RGBA) {
	t.Helper()
	b, err := encodePNG(img)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	checkDecodes(t, name, img, b)
}

// checkDecodes checks that PNG b decodes to img's pixels.
func checkDecodes(t *testing.T, name string, img *image.RGBA, b []byte) {
	t.Helper()
	got, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: the PNG does not decode: %v", name, err)
	}
	if got.Bounds().Dx() != img.Bounds().Dx() || got.Bounds().Dy() != img.Bounds().Dy() {
		t.Fatalf("%s: decoded %v, want the size of %v", name, got.Bounds(), img.Bounds())
	}
	for y := range img.Bounds().Dy() {
		for x := range img.Bounds().Dx() {
			want := img.RGBAAt(img.Bounds().Min.X+x, img.Bounds().Min.Y+y)
			if c := color.RGBAModel.Convert(got.At(got.Bounds().Min.X+x, got.Bounds().Min.Y+y)).(color.RGBA); c != want {
				t.Fatalf("%s: pixel (%d,%d) is %v, want %v", name, x, y, c, want)
			}
		}
	}
}

// TestAdlerJoin: the Adler-32 of two parts joined is that of the whole,
// wherever the cut, for parts past the modulus's length too.
func TestAdlerJoin(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 200_000)
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	for _, cut := range []int{0, 1, 5552, 65521, 65522, 131_100, len(data) - 1, len(data)} {
		x, y := data[:cut], data[cut:]
		if got, want := adlerJoin(adler32.Checksum(x), adler32.Checksum(y), len(y)), adler32.Checksum(data); got != want {
			t.Errorf("cut at %d: joined %08x, want %08x", cut, got, want)
		}
	}
}

// BenchmarkEncodePNG encodes a 1165x700 screenshot of 500 marked
// controls (the size of LibreOffice's window) with image/png at
// BestSpeed, the encoder before, and with encodePNG in one stripe and in
// one per processor.
//
//	go test -run '^$' -bench EncodePNG ./tools/desktop/
func BenchmarkEncodePNG(b *testing.B) {
	img := controlsImage(1165, 700, 500)
	for _, enc := range []struct {
		name string
		fn   func(*image.RGBA) ([]byte, error)
	}{
		{"image-png", func(img *image.RGBA) ([]byte, error) {
			var buf bytes.Buffer
			err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img)
			return buf.Bytes(), err
		}},
		{"fast-one-stripe", func(img *image.RGBA) ([]byte, error) { return encodePNGIn(img, 1) }},
		{"fast", encodePNG},
	} {
		b.Run(enc.name, func(b *testing.B) {
			var out []byte
			cpu0 := cputime.Process()
			for b.Loop() {
				var err error
				if out, err = enc.fn(img); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(out)), "bytes")
			// Processor time, which other processes' load does not add to.
			b.ReportMetric(ms(cputime.Process()-cpu0)/float64(b.N), "cpu-ms/op")
		})
	}
}
