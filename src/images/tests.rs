// SQL tests of the PDQ functions: the reference's hashes on every format, the dihedral
// hashes, quality, and every kind of bad input. The images are tests/images (written by
// tests/integration/pdq_reference.py fixtures, which printed the reference's hashes below:
// `pdqhash` over Pillow's pixels).

/// The test images in a temporary table `img (name, data)`.
fn load_images() {
    Spi::run("CREATE TEMP TABLE img (name text PRIMARY KEY, data bytea NOT NULL)").unwrap();
    macro_rules! image {
        ($name:literal) => {
            (
                $name,
                &include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/images/", $name))[..],
            )
        };
    }
    let pattern_jpg = image!("pattern.jpg").1;
    let pattern_png = image!("pattern.png").1;
    for (name, data) in [
        image!("pattern.png"),
        image!("pattern.jpg"),
        image!("pattern.gif"),
        image!("pattern.webp"),
        image!("pattern.bmp"),
        image!("pattern.tiff"),
        image!("gray.png"),
        image!("rgba.png"),
        image!("rgb16.png"),
        image!("animated.gif"),
        image!("tiny1.png"),
        image!("tiny5.png"),
        image!("flat.png"),
        image!("bomb.png"),
        ("truncated.jpg", &pattern_jpg[..pattern_jpg.len() / 2]),
        ("truncated.png", &pattern_png[..pattern_png.len() / 2]),
        ("text", &b"this is no image, only some text"[..]),
        ("empty", &b""[..]),
        // an ICO header: a format the decoders know by name but are not built with
        ("ico", &b"\x00\x00\x01\x00\x01\x00\x10\x10\x00\x00\x01\x00\x20\x00\x68\x04\x00\x00\x16\x00\x00\x00"[..]),
    ] {
        Spi::run_with_args("INSERT INTO img VALUES ($1, $2)", &[name.into(), data.into()]).unwrap();
    }
}

/// `SELECT function(data)::cast` of the image `name`.
fn of(function: &str, name: &str, cast: &str) -> String {
    format!("SELECT {function}(data)::{cast} FROM img WHERE name = '{name}'")
}

/// The pattern's hash, from the reference (the same pixels in every lossless format).
const PATTERN: &str = "fea9f153aea9f913baa97e43eaa95403bea9efedaaa97443aaa90003aaa90003";

#[pg_test]
fn pdq_equals_the_reference_on_every_format() {
    load_images();
    for (name, expected) in [
        // lossless: the same pixels as the PNG, so the same hash
        ("pattern.png", PATTERN),
        ("pattern.webp", PATTERN),
        ("pattern.bmp", PATTERN),
        ("pattern.tiff", PATTERN),
        // alpha dropped, not composited, as Pillow's convert("RGB") does
        ("rgba.png", PATTERN),
        // 16 bits: each sample's high byte (its low byte is noise here), as Pillow reads them
        ("rgb16.png", PATTERN),
        // GIF's palette changes the pixels; an animation hashes as its first frame
        ("pattern.gif", "db56a4895db84a67c6b86855dfa2ea52f5a8af977b28b6d86a899212e8e91103"),
        ("animated.gif", "db56a4895db84a67c6b86855dfa2ea52f5a8af977b28b6d86a899212e8e91103"),
        ("gray.png", "ffb9f213a7b95243aaa9e943fea91503bea9ebec8be96403eaa95403aaa90003"),
        // the smallest size PDQ hashes
        ("tiny5.png", "c3f0318c3c0fce73c4b19b66c6f164993b0e348dc3f0318c3c0fce73c4f19b66"),
    ] {
        assert_eq!(text(&of("pdq", name, "text")), expected, "{name}");
    }
    // JPEG: the core's decoder gives libjpeg-turbo's pixels (Pillow's), so the same hash
    assert_eq!(
        text(&of("pdq", "pattern.jpg", "text")),
        "fe295d7312f9e92b2ae9d4c3afe90553ffa90afd8aa9b313aaa94013aaa90003"
    );
    assert!(is_null("SELECT pdq(NULL)"));
    // every row of a parallel scan (the suite forces queries into workers)
    assert_eq!(
        int("SELECT count(*) FROM img WHERE name LIKE 'pattern%' AND pdq(data) <~> pdq(data) = 0"),
        6
    );
}

#[pg_test]
fn pdq_dihedral_equals_the_references_eight_hashes() {
    load_images();
    assert_eq!(
        text(&of("pdq_dihedral", "pattern.png", "text")),
        "{fea9f153aea9f913baa97e43eaa95403bea9efedaaa97443aaa90003aaa90003,\
         28aa28a382aa200f2aea1a2faaea0aafaaeaabafaaaaabffaaeaffbf55150000,\
         02ac0aa9dabc00298efc80290efc22a9a9fc0007affc8aa9bffcaaa9fffcaaa9,\
         2dbf000583af0845ebbf1005fbbf0405efbf0105ffbf0555ffbf55150040aaaa,\
         2aa90aac8aa9062c9aa981bc2aa9aafcaaa91012aaa98abcaaa9fffcaaa9fffc,\
         22fc0006dafc0406cffc00062ffc0056ebfc0a98effc0016bffc1556fffc5556,\
         faead750fefadd90beeaa5d0aeea5040aaea4450aaea5000aaea00405515ffff,\
         2cbf200201af200a6abf0a2aeb3f00aaebbf0aaaffbf2aaaffbfaaea00405555}"
    );
    assert_eq!(
        int("SELECT count(*) FROM img WHERE name LIKE 'pattern%' AND (pdq_dihedral(data))[1] = pdq(data)"),
        6
    );
    assert!(is_null("SELECT pdq_dihedral(NULL)"));
}

#[pg_test]
fn pdq_quality_is_the_references() {
    load_images();
    assert_eq!(int(&of("pdq_quality", "pattern.png", "bigint")), 100);
    assert_eq!(int(&of("pdq_quality", "tiny5.png", "bigint")), 3);
    // too small to hash: the reference's quality 0 (pdq() itself refuses, below)
    assert_eq!(int(&of("pdq_quality", "tiny1.png", "bigint")), 0);
    // a flat image has no gradients
    assert_eq!(int(&of("pdq_quality", "flat.png", "bigint")), 0);
    assert!(is_null("SELECT pdq_quality(NULL)"));
}

#[pg_test]
fn pdq_with_quality_is_one_row_of_pdq_and_pdq_quality() {
    load_images();
    assert_eq!(
        text(&of("pdq_with_quality", "pattern.png", "text")),
        format!("({PATTERN},100)")
    );
    // every image that has a hash: the same hash and quality as the two functions give
    let hashed = "name LIKE 'pattern%' OR name IN ('gray.png', 'rgba.png', 'rgb16.png', \
                  'animated.gif', 'tiny5.png', 'flat.png')";
    assert_eq!(int(&format!("SELECT count(*) FROM img WHERE {hashed}")), 12);
    assert_eq!(
        int(&format!(
            "SELECT count(*) FROM img, pdq_with_quality(data) p \
             WHERE ({hashed}) AND p.hash = pdq(data) AND p.quality = pdq_quality(data)"
        )),
        12
    );
    // one row each, and none for NULL (strict)
    assert_eq!(
        int(&format!("SELECT count(*) FROM img, pdq_with_quality(data) WHERE {hashed}")),
        12
    );
    assert_eq!(int("SELECT count(*) FROM pdq_with_quality(NULL)"), 0);
}

#[pg_test]
fn pdq_refuses_bad_images_with_sqlstates() {
    load_images();
    for function in ["pdq", "pdq_quality", "pdq_with_quality", "pdq_dihedral"] {
        for (name, state) in [
            ("text", "22P03"),
            ("empty", "22P03"),
            ("truncated.jpg", "22P03"),
            ("truncated.png", "22P03"),
            ("ico", "0A000"),
            ("bomb.png", "54000"),
        ] {
            assert_eq!(sqlstate(&of(function, name, "text")).as_deref(), Some(state), "{function} {name}");
        }
    }
    assert_eq!(
        error_of(&of("pdq", "text", "text")).as_deref(),
        Some("22P03 invalid image: the bytes are not a JPEG, PNG, GIF, WebP, BMP or TIFF image")
    );
    assert_eq!(
        error_of(&of("pdq", "bomb.png", "text")).as_deref(),
        Some("54000 image too large: 100000 x 100000 = 10000000000 pixels, more than neardup.pdq_max_pixels (25000000)")
    );
    // no hash for an image under 5 x 5 (the reference's would be all zeros)
    for function in ["pdq", "pdq_with_quality", "pdq_dihedral"] {
        assert_eq!(
            error_of(&of(function, "tiny1.png", "text")).as_deref(),
            Some("22023 image too small for PDQ: 1 x 1 pixels (PDQ hashes images of at least 5 x 5)")
        );
    }
    // the limit is a setting: 80 x 60 = 4800 pixels pass at 4800, not at 4799
    Spi::run("SET LOCAL neardup.pdq_max_pixels = 4799").unwrap();
    assert_eq!(
        error_of(&of("pdq", "pattern.png", "text")).as_deref(),
        Some("54000 image too large: 80 x 60 = 4800 pixels, more than neardup.pdq_max_pixels (4799)")
    );
    Spi::run("SET LOCAL neardup.pdq_max_pixels = 4800").unwrap();
    assert_eq!(text(&of("pdq", "pattern.png", "text")), PATTERN);
}
