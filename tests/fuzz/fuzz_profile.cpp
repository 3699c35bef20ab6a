// Hardware profiles: load_profile on a file holding the input; a profile that loads must then be usable by
// the model (predict and the pull sweep), since `gemmar model --profile FILE` does exactly that.
#include "fuzz_common.hpp"
#include "model/model.hpp"

GEMMAR_FUZZ_TARGET(profile) {
  using namespace gemmar;
  const std::string path = fuzz::write_temp(fuzz::as_string(data, size), ".profile.json");
  fuzz::expect_only_gemmar_errors([&] {
    const model::Profile p = model::load_profile(path);
    Config c;
    c.gather_dtype = WireDtype::Fp8;
    c.gather_transport = Transport::Lsa;
    for (Mode m : all_modes()) {
      c.mode = m;
      (void)model::to_json(model::predict(p, Shape{}, c));
    }
    (void)model::sweep_pull_blocks(p, Shape{}, c, {8, 64, 512});
  });
  return 0;
}
