// SPDX-License-Identifier: MIT
/*
 * The sweep's heat map as an SVG file (--svg): every NIC pair of the fleet a cell,
 * coloured by its worst finding, the hosts and NICs that differ from the fleet marked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_sweep.h"

/* ---- SVG ------------------------------------------------------------------------------- */

#define SVG_CELL 24
#define SVG_LABEL 150
#define SVG_TOP 150

static const char *cell_colour(const struct rn_sweep *s, int h1, int i1, int h2, int i2)
{
	const struct rn_pair_cell *c;

	if (h1 == h2)
		return "#eeeeee";
	c = rn_sweep_cell_of(s, h1, i1, h2, i2);
	if (!c)
		return "#8e6bbf";
	if (c->a_sev >= RN_SEV_FATAL || c->b_sev >= RN_SEV_FATAL ||
	    c->rdma == RN_PAIR_RDMA_TIMEOUT || c->rdma == RN_PAIR_RDMA_ERROR)
		return "#d7301f";
	if (c->a_cause || c->b_cause || c->slow)
		return "#f28e2b";
	if (!c->a_checked && !c->b_checked && c->rdma == RN_PAIR_RDMA_SKIPPED)
		return "#bbbbbb";
	return "#3a9d4a";
}

static const char *verdict_colour(const struct rn_dw_nic *n)
{
	return n->verdict == RN_VERDICT_REFUSED ? "#d7301f" :
	       n->verdict == RN_VERDICT_WARN    ? "#f28e2b" :
	       rn_sweep_nic_problem(n)          ? "#f28e2b" :
						  "#3a9d4a";
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			fputc(*s, f);
	}
}

static int nic_differs(const struct rn_sweep *s, int h, int i)
{
	int k;

	for (k = 0; k < s->ndiffs; k++)
		if (s->diffs[k].h == h && (s->diffs[k].i == i || s->diffs[k].i < 0))
			return 1;
	return 0;
}

/* The lines under the legend: what differs from the fleet, the slow NICs. With @f NULL
 * only counted. */
static int svg_notes(FILE *f, const struct rn_sweep *s, int y)
{
	int n = 0, k, h, i;

	if (s->ndiffs && f)
		fprintf(f,
			"<text x=\"10\" y=\"%d\" font-weight=\"bold\">differs from the fleet:"
			"</text>\n",
			y + n * 16);
	n += !!s->ndiffs;
	for (k = 0; k < s->ndiffs; k++, n++) {
		const struct rn_sweep_diff *d = &s->diffs[k];

		if (!f)
			continue;
		fprintf(f, "<text x=\"20\" y=\"%d\" fill=\"#d7301f\">", y + n * 16);
		xml_text(f, s->hosts[d->h].name);
		if (d->i >= 0) {
			fputc(':', f);
			xml_text(f, rn_sweep_nic_name(s, d->h, d->i));
		}
		fprintf(f, " %s ", rn_sweep_field_name(d->field));
		xml_text(f, d->value);
		fprintf(f, ", where %d of %d have ", d->count, d->of);
		xml_text(f, d->majority);
		fprintf(f, "</text>\n");
	}
	for (h = 0; h < s->n; h++)
		for (i = 0; s->hosts[h].slow && i < rn_sweep_nnics(s, h); i++) {
			if (!s->hosts[h].slow[i].cause)
				continue;
			if (f) {
				fprintf(f,
					"<text x=\"10\" y=\"%d\">slow NIC (the bad end of its slow "
					"pairs): ",
					y + n * 16);
				xml_text(f, s->hosts[h].name);
				fputc(':', f);
				xml_text(f, rn_sweep_nic_name(s, h, i));
				fprintf(f, "</text>\n");
			}
			n++;
		}
	return n;
}

static void svg_fill(FILE *f, const void *arg)
{
	const struct rn_sweep *s = arg;
	char c[64];
	int total = 0, h, i, h2, i2, y, x, gw, size;

	for (h = 0; h < s->n; h++)
		total += rn_sweep_nnics(s, h);
	gw = total * SVG_CELL;
	size = SVG_LABEL + gw + 40;
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"font-family=\"DejaVu Sans Mono, monospace\" font-size=\"11\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		RN_MAX(size, 700), SVG_TOP + gw + 110 + svg_notes(NULL, s, 0) * 16);
	fprintf(f,
		"<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">roce-doctor-mpi: "
		"%d hosts, %d NICs, %d bad NIC pairs, %d fleet differences</text>\n",
		s->n, total, rn_sweep_bad_pairs(s, -1), s->ndiffs);
	/* column labels (rotated) and row labels, with the NIC's own verdict as a dot */
	for (h = 0, x = 0; h < s->n; h++)
		for (i = 0; i < rn_sweep_nnics(s, h); i++, x++) {
			const struct rn_dw_nic *n = &s->hosts[h].inv->nics[i];
			int cx = SVG_LABEL + x * SVG_CELL + SVG_CELL / 2;
			int cy = SVG_TOP + x * SVG_CELL + SVG_CELL / 2;

			fprintf(f, "<text transform=\"translate(%d,%d) rotate(-60)\"%s>", cx + 4,
				SVG_TOP - 14, nic_differs(s, h, i) ? " fill=\"#d7301f\"" : "");
			xml_text(f, s->hosts[h].name);
			fputc(':', f);
			xml_text(f, n->netdev);
			fprintf(f, "</text>\n<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"%s\"/>\n",
				cx, SVG_TOP - 7, verdict_colour(n));
			fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\"%s>", SVG_LABEL - 14,
				cy + 4, nic_differs(s, h, i) ? " fill=\"#d7301f\"" : "");
			xml_text(f, s->hosts[h].name);
			fputc(':', f);
			xml_text(f, n->netdev);
			fprintf(f, "</text>\n<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"%s\"/>\n",
				SVG_LABEL - 7, cy, verdict_colour(n));
		}
	for (h = 0, y = 0; h < s->n; h++)
		for (i = 0; i < rn_sweep_nnics(s, h); i++, y++)
			for (h2 = 0, x = 0; h2 < s->n; h2++)
				for (i2 = 0; i2 < rn_sweep_nnics(s, h2); i2++, x++) {
					const struct rn_pair_cell *cl =
						h == h2 ? NULL : rn_sweep_cell_of(s, h, i, h2, i2);

					fprintf(f,
						"<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
						"fill=\"%s\" stroke=\"white\"><title>",
						SVG_LABEL + x * SVG_CELL, SVG_TOP + y * SVG_CELL,
						SVG_CELL, SVG_CELL, cell_colour(s, h, i, h2, i2));
					xml_text(f, s->hosts[h].name);
					fprintf(f, ":%s - ", rn_sweep_nic_name(s, h, i));
					xml_text(f, s->hosts[h2].name);
					fprintf(f, ":%s: %s", rn_sweep_nic_name(s, h2, i2),
						h == h2 ? "same host" :
						cl      ? rn_sweep_cell_str(cl, c, sizeof(c)) :
							  "no result");
					if (cl && cl->bw == RN_PAIR_BW_OK)
						fprintf(f, ", %.2f Gbit/s", cl->bw_mbps / 1000.0);
					fprintf(f, "</title></rect>\n");
				}
	/* host boundaries */
	for (h = 0, x = 0; h <= s->n; h++) {
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
			SVG_LABEL + x * SVG_CELL, SVG_TOP, SVG_LABEL + x * SVG_CELL, SVG_TOP + gw);
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
			SVG_LABEL, SVG_TOP + x * SVG_CELL, SVG_LABEL + gw, SVG_TOP + x * SVG_CELL);
		x += h < s->n ? rn_sweep_nnics(s, h) : 0;
	}
	y = SVG_TOP + gw + 25;
	{
		static const struct {
			const char *colour, *what;
		} legend[] = {
			{ "#3a9d4a", "ok" },
			{ "#f28e2b", "warning, slow" },
			{ "#d7301f", "broken" },
			{ "#bbbbbb", "not checked" },
			{ "#8e6bbf", "no result (host hung)" },
		};
		size_t l;

		for (l = 0; l < RN_ARRAY_SIZE(legend); l++) {
			x = 10 + (int)(l % 3) * 170;
			fprintf(f,
				"<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>"
				"<text x=\"%d\" y=\"%d\">%s</text>\n",
				x, y + (int)(l / 3) * 22, legend[l].colour, x + 20,
				y + (int)(l / 3) * 22 + 11, legend[l].what);
		}
		fprintf(f,
			"<text x=\"10\" y=\"%d\">dots: the NIC's own verdict (host check); "
			"red labels: differ from the fleet</text>\n",
			y + 60);
	}
	svg_notes(f, s, y + 84);
	fprintf(f, "</svg>\n");
}

int rn_sweep_svg(const char *path, const struct rn_sweep *s)
{
	return rn_doctor_write_file(path, svg_fill, s);
}
