package evals

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"image/png"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/trajectory"
)

// htmlStep is one agent step as the HTML report shows it.
type htmlStep struct {
	N        int
	Agent    string
	Step     int
	Status   string
	Thought  string
	Result   string
	Commands []htmlCommand
	Tokens   string
	Timings  string
	Shot     *htmlShot
	Errors   []string
}

type htmlCommand struct {
	Call   string
	Status string
	Output string
	OK     bool
}

// htmlShot is a screenshot the model saw, with the point it clicked.
type htmlShot struct {
	Src template.URL
	// X and Y are the clicked point in image pixels; HasPoint says there
	// is one. W and H are the image's size when the PNG header tells it.
	X, Y, W, H float64
	HasPoint   bool
}

type htmlTrial struct {
	ID      string
	Case    string
	Result  *TrialResult
	Steps   []htmlStep
	Problem string
}

type htmlPage struct {
	Report *Report
	Trials []htmlTrial
}

// WriteHTML writes a self-contained HTML report (no external files or
// scripts) in which each trial's trajectory can be walked step by step:
// thought, commands and results, screenshots with the clicked point marked,
// tokens and timings. resultsDir is where the trials' trajectories are.
func (r *Report) WriteHTML(w io.Writer, resultsDir string) error {
	page := htmlPage{Report: r}
	// Trials that replayed one recording exactly share its trajectory:
	// read it once.
	steps := map[string][]htmlStep{}
	for _, c := range r.Cases {
		for _, t := range c.Trials {
			ht := htmlTrial{ID: fmt.Sprintf("t-%s-%d", c.ID, t.Trial), Case: c.ID, Result: t}
			p := t.TrajectoryPath(resultsDir)
			if s, ok := steps[p]; ok {
				ht.Steps = s
			} else if tr, err := trajectory.Read(p); err != nil {
				ht.Problem = err.Error()
			} else {
				ht.Steps = htmlSteps(tr)
				steps[p] = ht.Steps
			}
			page.Trials = append(page.Trials, ht)
		}
	}
	return htmlTmpl.Execute(w, page)
}

func htmlSteps(tr *trajectory.Trajectory) []htmlStep {
	var steps []htmlStep
	lastImage := map[string]*htmlShot{} // by agent: the latest screenshot the model saw
	for _, e := range tr.Events {
		switch e.Type {
		case trajectory.TypeModelCall:
			if shot := lastShot(e.Call); shot != nil {
				lastImage[e.Agent] = shot
			}
		case trajectory.TypeStep:
			s := htmlStep{N: len(steps) + 1, Agent: e.Agent, Step: e.Step, Status: e.Status, Errors: e.Errors}
			if e.Error != "" {
				s.Errors = append(s.Errors, e.Error)
			}
			if d := e.Decision; d != nil {
				s.Thought, s.Result = d.Thought, d.Result
			}
			for i, c := range e.Commands {
				hc := htmlCommand{Call: c.String(), Status: "not run"}
				if i < len(e.Results) {
					res := e.Results[i]
					hc.Status, hc.OK = string(res.Status), res.OK()
					hc.Output = cutText(resultText(res), 4000)
				}
				s.Commands = append(s.Commands, hc)
			}
			if e.Usage != nil {
				s.Tokens = fmt.Sprintf("%d prompt + %d completion tokens", e.Usage.PromptTokens, e.Usage.CompletionTokens)
				if e.Usage.Estimated {
					s.Tokens = "~" + s.Tokens + " (estimated)"
				}
			}
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(e.TimingsMS)) {
				parts = append(parts, fmt.Sprintf("%s %.1f ms", k, e.TimingsMS[k]))
			}
			s.Timings = fmt.Sprintf("%.1f ms", e.DurationMS)
			if len(parts) > 0 {
				s.Timings += " (" + strings.Join(parts, ", ") + ")"
			}
			if shot := lastImage[e.Agent]; shot != nil {
				cp := *shot
				cp.X, cp.Y, cp.HasPoint = command.Point(e.Commands, e.Results)
				s.Shot = &cp
				delete(lastImage, e.Agent)
			}
			steps = append(steps, s)
		}
	}
	return steps
}

func resultText(r command.Result) string {
	if r.OK() {
		var s string
		if json.Unmarshal(r.Result, &s) == nil {
			return s
		}
		return string(r.Result)
	}
	return r.Error
}

// lastShot is the last image in a model request.
func lastShot(c *trajectory.Call) *htmlShot {
	if c == nil {
		return nil
	}
	msgs := c.Request.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		imgs := msgs[i].Images
		for j := len(imgs) - 1; j >= 0; j-- {
			img := imgs[j]
			shot := &htmlShot{}
			switch {
			case len(img.Data) > 0:
				mt := img.MIMEType
				if mt == "" {
					mt = "image/png"
				}
				shot.Src = template.URL("data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(img.Data))
				if c, err := png.DecodeConfig(bytes.NewReader(img.Data)); err == nil {
					shot.W, shot.H = float64(c.Width), float64(c.Height)
				}
			case strings.HasPrefix(img.URL, "data:image/"):
				shot.Src = template.URL(img.URL)
			default:
				continue // a remote image would make the report depend on the network
			}
			return shot
		}
	}
	return nil
}

func pct(v, of float64) string {
	if of <= 0 {
		return "0"
	}
	return fmt.Sprintf("%.2f", 100*v/of)
}

var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":     pct,
	"percent": func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) },
	"f3":      func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"ints":    sortedInts[float64],
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Eval: {{.Report.Suite}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;vertical-align:top}
.ok{color:#176117}.bad{color:#a11}.trial{border:1px solid #bbb;border-radius:6px;margin:1em 0;padding:.5em 1em}
.step{border-top:1px dashed #ccc;padding:.4em 0}.walk .step{display:none}.walk .step.current{display:block}
pre{background:#f6f6f6;padding:.4em;white-space:pre-wrap;word-break:break-word;max-height:24em;overflow:auto;margin:.2em 0}
.shot{position:relative;display:inline-block;max-width:100%}.shot img{max-width:100%;display:block;border:1px solid #999}
.mark{position:absolute;width:18px;height:18px;margin:-10px 0 0 -10px;border:3px solid #e00;border-radius:50%;box-shadow:0 0 0 2px #fff}
.meta{color:#666;font-size:12px}nav button{margin-right:.5em}
</style>
</head>
<body>
<h1>Eval: {{.Report.Suite}}</h1>
{{with .Report.Metrics}}
<table id="metrics">
<tr><th>success rate</th><td>{{percent .SuccessRate}} ({{.Successes}}/{{.Trials}} trials, {{.Cases}} cases)</td></tr>
{{range $k := ints .PassAtK}}<tr><th>pass@{{$k}} / pass^{{$k}}</th><td>{{f3 (index $.Report.Metrics.PassAtK $k)}} / {{f3 (index $.Report.Metrics.PassHatK $k)}}</td></tr>{{end}}
<tr><th>step success</th><td>{{percent .StepSuccess}}</td></tr>
<tr><th>mean steps</th><td>{{printf "%.1f" .MeanSteps}}</td></tr>
<tr><th>tokens</th><td>{{.Tokens.TokensText}}</td></tr>
<tr><th>cost</th><td>{{.CostText}}</td></tr>
<tr><th>failures</th><td>{{range $k, $v := .Failures}}{{$k}}: {{$v}}<br>{{else}}none{{end}}</td></tr>
</table>
{{end}}
<h2>Cases</h2>
<table id="cases"><tr><th>case</th><th>successes</th><th>trials</th></tr>
{{range .Report.Cases}}<tr><td>{{.ID}}</td><td>{{.Successes}}</td><td>{{range .Trials}}<a href="#t-{{.Case}}-{{.Trial}}" class="{{if .Success}}ok{{else}}bad{{end}}">#{{.Trial}} {{if .Success}}pass{{else}}{{.Failure}}{{end}}</a> {{end}}</td></tr>
{{end}}</table>
<h2>Trajectories</h2>
{{range .Trials}}
<section class="trial" id="{{.ID}}" data-steps="{{len .Steps}}">
<h3>{{.Case}} #{{.Result.Trial}}: <span class="{{if .Result.Success}}ok{{else}}bad{{end}}">{{if .Result.Success}}pass{{else}}{{.Result.Failure}}{{end}}</span></h3>
<p class="meta">model {{.Result.Model}} · status {{.Result.Status}} · {{.Result.Steps}} steps · {{if .Result.Usage.Estimated}}~{{end}}{{.Result.Usage.PromptTokens}}+{{.Result.Usage.CompletionTokens}} tokens · {{printf "%.0f" .Result.WallMS}} ms</p>
<p><b>Answer:</b> {{.Result.Answer}}</p>
{{if .Result.Detail}}<pre>{{.Result.Detail}}</pre>{{end}}
{{range .Result.Checks}}<div class="{{if .Pass}}ok{{else}}bad{{end}}">{{if .Pass}}✔{{else}}✘{{end}} {{.Name}} {{.Detail}}{{with .Verdict}} (judge: pass={{.Pass}}, score {{.Score}}){{end}}</div>{{end}}
{{if .Problem}}<p class="bad">{{.Problem}}</p>{{end}}
<nav hidden><button type="button" data-go="-1">◀ previous step</button><button type="button" data-go="1">next step ▶</button><button type="button" data-go="all">all steps</button> <span class="pos"></span></nav>
{{range .Steps}}
<div class="step" data-step="{{.N}}">
<b>{{.N}}. [{{.Agent}} step {{.Step}}] {{.Status}}</b>
{{if .Thought}}<div><i>Thought:</i> {{.Thought}}</div>{{end}}
{{if .Result}}<div><i>Result:</i> {{.Result}}</div>{{end}}
{{range .Commands}}<div><code>{{.Call}}</code> → <span class="{{if .OK}}ok{{else}}bad{{end}}">{{.Status}}</span><pre>{{.Output}}</pre></div>{{end}}
{{with .Shot}}<div class="shot"><img src="{{.Src}}" alt="screenshot">{{if and .HasPoint (gt .W 0.0)}}<span class="mark" style="left:{{pct .X .W}}%;top:{{pct .Y .H}}%"></span>{{end}}</div>{{end}}
{{range .Errors}}<div class="bad">{{.}}</div>{{end}}
<div class="meta">{{.Tokens}} · {{.Timings}}</div>
</div>
{{end}}
</section>
{{end}}
<script>
(function () {
  "use strict";
  document.querySelectorAll("section.trial").forEach(function (sec) {
    var steps = sec.querySelectorAll(".step");
    var nav = sec.querySelector("nav");
    if (!steps.length || !nav) { return; }
    var pos = 0;
    function show() {
      steps.forEach(function (s, i) { s.classList.toggle("current", i === pos); });
      nav.querySelector(".pos").textContent = "step " + (pos + 1) + " of " + steps.length;
    }
    nav.hidden = false;
    sec.classList.add("walk");
    nav.addEventListener("click", function (ev) {
      var go = ev.target.getAttribute("data-go");
      if (!go) { return; }
      if (go === "all") { sec.classList.toggle("walk"); return; }
      pos = Math.min(steps.length - 1, Math.max(0, pos + Number(go)));
      show();
    });
    show();
  });
  document.documentElement.setAttribute("data-ready", "yes");
})();
</script>
</body>
</html>
`))
