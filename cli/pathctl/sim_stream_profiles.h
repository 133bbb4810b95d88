// `pathctl sim --subpaths` and `--calls`: profiles built straight from the block and call stream
// (no path engine), each scored against exact counts of the same stream.
//  --subpaths: the OSP reservoir's report ([Oren 2002], see docs/references.md): top-k hot
//              subpaths with their blocks, estimate, Chernoff error bound at a confidence, f and
//              memory; a second pass counts the reported subpaths exactly.
//  --calls:    hot call pairs and hot methods ([HPS 2005]), from the whole stream or from its
//              bursty / window samples, with the HPS relative-contribution overlap against the
//              exact counts.
#pragma once

#include "pathctl/command.h"

namespace pathctl {

// Runs whichever of --subpaths / --calls are set (both in one pass over the stream).
int RunStreamProfiles(Args& args);

}  // namespace pathctl
