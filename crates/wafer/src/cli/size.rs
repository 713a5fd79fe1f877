//! Byte sizes on the command line: parsing "16GiB" and printing "16.0 GiB".

/// Parses a byte size: a number with an optional suffix. `K`, `M`, `G`, `T` and `KiB`, `MiB`,
/// `GiB`, `TiB` are powers of 1024; `KB`, `MB`, `GB`, `TB` are powers of 1000; `B` or no suffix
/// is bytes. Case-insensitive; fractions are allowed when the result is a whole number of bytes
/// ("1.5GiB").
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let num = num.replace('_', "");
    let mult: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "ki" | "kib" => 1 << 10,
        "m" | "mi" | "mib" => 1 << 20,
        "g" | "gi" | "gib" => 1 << 30,
        "t" | "ti" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(format!(
            "unknown size suffix '{other}' in '{s}' (use B, KiB, MiB, GiB, TiB or KB, MB, GB, TB)"
        ))
        }
    };
    if num.is_empty() {
        return Err(format!("'{s}' is not a size (e.g. 4096, 64MiB, 16GiB)"));
    }
    if let Ok(n) = num.parse::<u64>() {
        return n
            .checked_mul(mult)
            .ok_or_else(|| format!("size '{s}' is too large"));
    }
    let x: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 4096, 64MiB, 16GiB)"))?;
    let bytes = x * mult as f64;
    if !(bytes.is_finite() && bytes < 1.8e19) {
        return Err(format!("size '{s}' is too large"));
    }
    if bytes.fract() != 0.0 {
        return Err(format!("size '{s}' is not a whole number of bytes"));
    }
    Ok(bytes as u64)
}

/// Rounds a size given by `flag` down to a multiple of `unit` bytes (a device's mapping unit),
/// saying so on stderr when it changes; a size below one unit is an error.
pub fn round_to_unit(bytes: u64, unit: u64, flag: &str) -> Result<u64, String> {
    let unit = unit.max(1);
    let r = bytes - bytes % unit;
    if r == 0 {
        return Err(format!(
            "{flag} {bytes} B is less than one {}-byte mapping unit",
            unit
        ));
    }
    if r != bytes {
        eprintln!(
            "note: {flag} {bytes} B is not a multiple of the {} mapping unit: using {r} B \
             ({})",
            format_bytes(unit),
            format_bytes(r)
        );
    }
    Ok(r)
}

/// [`parse_size`] for a simulated device's logical size: rounded down to the 4 KiB mapping unit
/// of the benchmarks' SSDs (saying so), at least one unit.
pub fn parse_device_size(s: &str) -> Result<u64, String> {
    round_to_unit(parse_size(s)?, 4096, &format!("--data-size {s} ="))
}

/// A byte count with a binary unit: "512 B", "4 KiB", "1.5 MiB", "16.0 GiB".
pub fn format_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.2} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_suffixes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("16GiB").unwrap(), 16 << 30);
        assert_eq!(parse_size("16 gib").unwrap(), 16 << 30);
        assert_eq!(parse_size("2T").unwrap(), 2 << 40);
        assert_eq!(parse_size("1GB").unwrap(), 1_000_000_000);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("100B").unwrap(), 100);
        assert!(parse_size("").is_err());
        assert!(parse_size("GiB").is_err());
        assert!(parse_size("12XB")
            .unwrap_err()
            .contains("unknown size suffix"));
        assert!(parse_size("0.3KiB").unwrap_err().contains("whole number"));
        assert!(parse_size("99999999TiB").is_err());
    }

    #[test]
    fn rounds_to_the_mapping_unit() {
        assert_eq!(
            round_to_unit(1_000_000_000, 4096, "--capacity"),
            Ok(999_997_440)
        );
        assert_eq!(round_to_unit(8192, 4096, "--capacity"), Ok(8192));
        assert!(round_to_unit(100, 4096, "--capacity").is_err());
    }

    #[test]
    fn formats() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(4096), "4 KiB");
        assert_eq!(format_bytes(3 << 19), "1.50 MiB");
        assert_eq!(format_bytes(16 << 30), "16 GiB");
    }
}
