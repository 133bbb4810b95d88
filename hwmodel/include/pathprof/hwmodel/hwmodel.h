// Everything of the path engine in one include.
#pragma once

#include "pathprof/hwmodel/branch_queue.h"
#include "pathprof/hwmodel/bursty_controller.h"
#include "pathprof/hwmodel/exact_path_profile.h"
#include "pathprof/hwmodel/hot_path_table.h"
#include "pathprof/hwmodel/operation_table.h"
#include "pathprof/hwmodel/path_descriptor.h"
#include "pathprof/hwmodel/path_stack.h"
#include "pathprof/hwmodel/window_estimator.h"
