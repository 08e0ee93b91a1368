// Where kernelpro's own files are (prompts/, rules/, examples/, include/, python/): an installed
// kernelpro (`cmake --install`, the .deb) has its binaries in PREFIX/lib/kernelpro and these files
// in PREFIX/share/kernelpro; a build tree uses the source tree it was built from.
#pragma once

#include <filesystem>

namespace kp {

// PREFIX/share/kernelpro when the running binary lies in PREFIX/lib/kernelpro and that folder
// holds prompts/; else the source tree (KP_SOURCE_DIR).
std::filesystem::path resource_root();

}  // namespace kp
