#pragma once
// Small statistics shared by the judge and the report inputs.
#include <vector>

namespace gemmar {

// The median of `v` (the mean of the two middle values for an even count); `v` must not be empty.
double median(std::vector<double> v);

}  // namespace gemmar
