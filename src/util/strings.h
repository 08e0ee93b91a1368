// Small string helpers shared by every layer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace kp {

// Splits on a single character; keeps empty fields ("a,,b" -> {"a", "", "b"}).
std::vector<std::string> split(std::string_view text, char sep);
// Splits into lines, dropping a trailing '\r' from each.
std::vector<std::string> split_lines(std::string_view text);
std::string_view trim(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
// Keeps at most max_lines of the end of text, with a first line saying how many were cut.
std::string tail_lines(std::string_view text, size_t max_lines);

// A word as a POSIX shell reads it back: as is when it is plain, else in single quotes.
std::string shell_quote(const std::string& word);

// Reads a whole file. kNotFound when it does not exist, kIo otherwise; the message names the path.
Result<std::string> read_file(const std::string& path);
// Writes a whole file (truncating). kIo with the path on failure.
Status write_file(const std::string& path, std::string_view content);
// Writes a whole file through PATH.tmp.PID and a rename, so a reader (or a process on another
// node of a shared file system) sees the old file or the new one, never a part. kIo with the
// path on failure; the temporary file is removed.
Status write_file_atomic(const std::string& path, std::string_view content);
// True when path names a regular file this process may execute.
bool is_executable_file(const std::string& path);
// The current time in UTC as ISO 8601 to the second: "2026-12-03T07:41:57Z".
std::string utc_now_iso8601();

// Formats a duration given in seconds with a unit that keeps 3 significant digits:
// 0.0000123 -> "12.3 us", 0.0456 -> "45.6 ms", 2.5 -> "2.50 s".
std::string format_seconds(double seconds);
// Formats a byte count: 1536 -> "1.5 KiB", 3 << 30 -> "3.0 GiB".
std::string format_bytes(double bytes);

}  // namespace kp
