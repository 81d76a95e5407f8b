/* The timeline picture: a band per (comm, rank) with a row of calls (colored by collective) and a
 * row per channel of steps (each split into its wait / move / reduce shares), a time axis in ms,
 * labels and a legend. Drawn into an RGB buffer and handed to trace_png_write. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#define WIDTH 1600
#define LABEL_W 190 /* room for "rank 1234" at scale 2 and the channel names */
#define RIGHT_PAD 24
#define CALL_H 22
#define CHAN_H 12
#define MAX_CHAN_ROWS 16 /* a band stays readable; further channels are left out of the picture */
#define BAND_PAD 8
#define TOP_H 84
#define AXIS_H 48

typedef struct {
    uint8_t r, g, b;
} rgb_t;

typedef struct {
    uint8_t *px;
    int w, h;
} img_t;

static const rgb_t BLACK = {0, 0, 0}, WHITE = {255, 255, 255}, AXIS = {90, 90, 90}, GRID = {228, 228, 228};
static const rgb_t BAND_ALT = {246, 246, 250}, WAIT = {175, 175, 175}, MOVE = {60, 110, 225};
static const rgb_t REDUCE = {225, 185, 20}, OTHER = {215, 215, 215}, FAIL = {220, 0, 0};

static const struct {
    const char *coll;
    rgb_t c;
} palette[] = {
    {"allreduce", {31, 119, 180}},  {"broadcast", {255, 127, 14}},  {"reduce", {44, 160, 44}},
    {"allgather", {214, 39, 40}},   {"reduce_scatter", {148, 103, 189}}, {"gather", {140, 86, 75}},
    {"scatter", {227, 119, 194}},   {"alltoall", {188, 189, 34}},   {"alltoallv", {23, 190, 207}},
    {"barrier", {70, 70, 70}},      {"send", {255, 187, 120}},      {"recv", {152, 223, 138}},
    {"comm_split", {197, 176, 213}},
};
#define NPAL (sizeof(palette) / sizeof(palette[0]))

static rgb_t coll_color(const char *coll)
{
    for (size_t i = 0; i < NPAL; i++)
        if (!strcmp(coll, palette[i].coll))
            return palette[i].c;
    return (rgb_t){120, 60, 160};
}

static void fill(img_t *im, int x0, int y0, int x1, int y1, rgb_t c) /* [x0, x1) x [y0, y1) */
{
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > im->w ? im->w : x1;
    y1 = y1 > im->h ? im->h : y1;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            uint8_t *p = im->px + ((size_t)y * im->w + x) * 3;
            p[0] = c.r, p[1] = c.g, p[2] = c.b;
        }
}

static int text_width(const char *s, int scale)
{
    return (int)strlen(s) * 6 * scale;
}

/* Draws s with its top left at (x, y); returns the x after it. */
static int text(img_t *im, int x, int y, const char *s, int scale, rgb_t c)
{
    for (; *s; s++, x += 6 * scale) {
        const uint8_t *g = trace_font_glyph(*s);
        for (int col = 0; col < 5; col++)
            for (int row = 0; row < 7; row++)
                if (g[col] >> row & 1)
                    fill(im, x + col * scale, y + row * scale, x + (col + 1) * scale, y + (row + 1) * scale, c);
    }
    return x;
}

typedef struct {
    int64_t t_min, span;
    int x0, x1;
} scale_t;

static int xpos(const scale_t *s, int64_t t)
{
    return s->x0 + (int)((double)(t - s->t_min) * (s->x1 - s->x0) / (double)s->span);
}

static int chan_rows(const trace_rank_t *r)
{
    return r->nchannels < MAX_CHAN_ROWS ? r->nchannels : MAX_CHAN_ROWS;
}

static void draw_step(img_t *im, const scale_t *sc, const trace_step_t *s, int y0, int y1)
{
    int a = xpos(sc, s->t0), b = xpos(sc, s->t1);
    if (b <= a)
        b = a + 1;
    int64_t d = s->t1 - s->t0;
    if (b - a < 3 || d <= 0) { /* too narrow to split: its largest share */
        rgb_t c = s->wait >= s->move && s->wait >= s->reduce ? WAIT : s->move >= s->reduce ? MOVE : REDUCE;
        fill(im, a, y0, b, y1, c);
        return;
    }
    int64_t parts[3] = {s->wait, s->move, s->reduce};
    rgb_t colors[3] = {WAIT, MOVE, REDUCE};
    fill(im, a, y0, b, y1, OTHER);
    int x = a;
    for (int k = 0; k < 3; k++) {
        int w = (int)lround((double)(parts[k] < 0 ? 0 : parts[k]) * (b - a) / (double)d);
        w = x + w > b ? b - x : w;
        fill(im, x, y0, x + w, y1, colors[k]);
        x += w;
    }
    fill(im, b - 1, y0, b, y1, WHITE); /* a gap so neighbouring steps stay apart */
}

/* A tick every 1, 2 or 5 x 10^k ms, about ten across; grid: only the faint lines behind the
 * bands (drawn first, so boxes cover them), else the axis with its labels. */
static void draw_axis(img_t *im, const scale_t *sc, int y, bool grid)
{
    if (!grid)
        fill(im, sc->x0, y, sc->x1 + 1, y + 2, AXIS);
    double span_ms = sc->span / 1e6, raw = span_ms / 10, p = pow(10, floor(log10(raw))), step = p;
    if (raw / p > 5)
        step = 10 * p;
    else if (raw / p > 2)
        step = 5 * p;
    else if (raw / p > 1)
        step = 2 * p;
    int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    for (int i = 0;; i++) {
        double ms = i * step;
        if (ms > span_ms + 1e-12)
            break;
        int x = xpos(sc, sc->t_min + (int64_t)llround(ms * 1e6));
        if (grid) {
            fill(im, x, TOP_H - 4, x + 1, y, GRID);
            continue;
        }
        fill(im, x, y, x + 1, y + 8, AXIS);
        char buf[32];
        snprintf(buf, sizeof(buf), "%.*f", decimals, ms);
        text(im, x - text_width(buf, 2) / 2, y + 12, buf, 2, BLACK);
    }
    if (!grid)
        text(im, sc->x1 - text_width("time (ms)", 2), y + 32, "time (ms)", 2, AXIS);
}

static void draw_legend(img_t *im, const trace_set_t *set, bool steps)
{
    int x = 12, y = 44;
    x = text(im, x, y + 2, "calls:", 2, BLACK) + 8;
    for (size_t i = 0; i < NPAL; i++) {
        bool used = false;
        for (size_t r = 0; r < set->nranks && !used; r++)
            for (size_t c = 0; c < set->ranks[r].ncalls && !used; c++)
                used = !strcmp(set->ranks[r].calls[c].coll, palette[i].coll);
        if (!used)
            continue;
        fill(im, x, y, x + 16, y + 16, palette[i].c);
        x = text(im, x + 22, y + 2, palette[i].coll, 2, BLACK) + 14;
    }
    if (steps) {
        x = text(im, x + 16, y + 2, "steps:", 2, BLACK) + 8;
        const char *names[3] = {"wait", "move", "reduce"};
        rgb_t cs[3] = {WAIT, MOVE, REDUCE};
        for (int k = 0; k < 3; k++) {
            fill(im, x, y, x + 16, y + 16, cs[k]);
            x = text(im, x + 22, y + 2, names[k], 2, BLACK) + 14;
        }
    }
    fill(im, x, y, x + 16, y + 4, FAIL);
    text(im, x + 22, y + 2, "failed call", 2, BLACK);
}

int trace_plot_write(const trace_set_t *set, const char *path)
{
    int h = TOP_H + AXIS_H + 8;
    bool steps = false;
    for (size_t i = 0; i < set->nranks; i++) {
        h += CALL_H + chan_rows(&set->ranks[i]) * CHAN_H + 2 * BAND_PAD;
        steps = steps || set->ranks[i].nsteps;
    }
    img_t im = {calloc((size_t)WIDTH * h, 3), WIDTH, h};
    if (!im.px) {
        fprintf(stderr, "orbit-trace: out of memory for a %dx%d picture\n", WIDTH, h);
        return -1;
    }
    fill(&im, 0, 0, im.w, im.h, WHITE);
    scale_t sc = {set->t_min, set->t_max > set->t_min ? set->t_max - set->t_min : 1, LABEL_W, WIDTH - RIGHT_PAD};
    char buf[128];
    snprintf(buf, sizeof(buf), "orbit-trace: %zu ranks, %zu comm%s, %.3f ms", set->nranks, set->ncomms,
             set->ncomms == 1 ? "" : "s", sc.span / 1e6);
    text(&im, 12, 12, buf, 3, BLACK);
    draw_legend(&im, set, steps);

    int y = TOP_H;
    for (size_t i = 0; i < set->nranks; i++) { /* backgrounds and grid first, boxes over them */
        int band = CALL_H + chan_rows(&set->ranks[i]) * CHAN_H + 2 * BAND_PAD;
        if (i % 2)
            fill(&im, 0, y, im.w, y + band, BAND_ALT);
        y += band;
    }
    draw_axis(&im, &sc, y + 4, true);
    y = TOP_H;
    for (size_t i = 0; i < set->nranks; i++) {
        const trace_rank_t *r = &set->ranks[i];
        int band = CALL_H + chan_rows(r) * CHAN_H + 2 * BAND_PAD;
        snprintf(buf, sizeof(buf), "rank %d", r->rank);
        text(&im, 12, y + BAND_PAD + 4, buf, 2, BLACK);
        if (set->ncomms > 1) {
            snprintf(buf, sizeof(buf), "comm %s", r->comm);
            text(&im, 12, y + BAND_PAD + 22, buf, 1, AXIS);
        }
        int cy = y + BAND_PAD;
        for (size_t j = 0; j < r->ncalls; j++) {
            const trace_call_t *c = &r->calls[j];
            int a = xpos(&sc, c->t0), b = xpos(&sc, c->t1);
            fill(&im, a, cy, b > a ? b : a + 1, cy + CALL_H - 2, coll_color(c->coll));
            if (strcmp(c->status, "OK"))
                fill(&im, a, cy, b > a ? b : a + 1, cy + 4, FAIL);
            if (b - a > 2)
                fill(&im, b - 1, cy, b, cy + CALL_H - 2, WHITE);
        }
        for (int ch = 0; ch < chan_rows(r); ch++) {
            snprintf(buf, sizeof(buf), "ch %d", ch);
            text(&im, LABEL_W - 8 - text_width(buf, 1), cy + CALL_H + ch * CHAN_H + 2, buf, 1, AXIS);
        }
        for (size_t j = 0; j < r->nsteps; j++) {
            const trace_step_t *s = &r->steps[j];
            if (s->channel >= MAX_CHAN_ROWS)
                continue;
            int sy = cy + CALL_H + s->channel * CHAN_H;
            draw_step(&im, &sc, s, sy, sy + CHAN_H - 2);
        }
        y += band;
    }
    draw_axis(&im, &sc, y + 4, false);
    int rc = trace_png_write(path, im.px, im.w, im.h);
    free(im.px);
    return rc;
}
