// The precision metric of [Whaley 2000] §6 (figs. 13 and 14; see docs/references.md): the
// correlation coefficient between two profiles whose members are keyed by textual context, so
// that two PCCTs (or two hot-method sets) built from different runs can be compared.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "pathprof/profiles/pcct.h"

namespace pathprof::profiles {

// Pearson correlation over the union of the keys of `a` and `b`; a key missing from one side
// counts 0 there, and repeated keys on one side are summed. Conventions where Pearson is undefined:
// 1.0 when both sides are equal (both empty or the same constant), else 0.0 when either side has
// zero variance.
double Correlation(const std::vector<std::pair<std::string, double>>& a,
                   const std::vector<std::pair<std::string, double>>& b);

// Correlation of the node (self) and edge weights of two PCCTs keyed by their root..node contexts,
// as in section 6.6.
double PcctCorrelation(const Pcct& a, const Pcct& b);

}  // namespace pathprof::profiles
