//! PDQ golden vectors: synthetic images (an LCG's noise, gradients, rings; sizes from the
//! reference's 5 × 5 minimum through its unblurred 64 × 64 to a 640 × 480 blur) whose hashes,
//! dihedral hashes and qualities were computed once with the `pdqhash` package (Meta's C++):
//! `tests/integration/pdq_reference.py golden` prints this table.

use neardup_core::images::pdq::{self, luminance, Luma, DIHEDRAL};

/// (kind, width, height, seed, quality, the 8 dihedral hashes in the reference's order)
type Golden = (&'static str, usize, usize, u32, i32, [&'static str; 8]);

const GOLDEN: [Golden; 7] = [
    (
        "noise",
        64,
        64,
        1,
        100,
        [
            "35b2ff792f29108c242f99f2af5b0b6cdc9d70389fd09e0f869a0bd45540a62d",
            "46b9bf3dea412b0d67b41544633d18d994acb8d9ed4039135b59e66a8e18956f",
            "70e755d37e7cba26717e3358fa0ea1c689c8da92ca8534a5d3cfa17e00150ca7",
            "13ec1597bf1481a732e1bfee3668b273c1f91273b81493b90e0c4cc0db4d3fc4",
            "35b200862f21ef73242f660daf5bf493dc958fc79fd061f0869af42b554059d2",
            "60e7aa2c7a7445d9717acca7fa0e5e3989c0256dca85cb5ad3cf5e810015f359",
            "46b940c2ea41d4f267b4eabb633de72694ac4726ed41c6ec7bd919958e186a91",
            "13ecea68bf14fe5832e1601136684d8cc1f9ed8cb8156c462e8cbb3fdb4dc03b",
        ],
    ),
    (
        "noise",
        5,
        5,
        2,
        100,
        [
            "64d964d99b269b263e0fc1f03c0f3e0fc1f064d964d964d99b269b263e0fc1f0",
            "348d3b0ecb72c6f13b0e348d3b0ecb72c4f13b0e348d3b0ecb72c4f13b0e348d",
            "318cce73c673318c6a5a6b5a294a94a594a5ce73318cce73ce73318c6b5a6b5a",
            "61d891a49e276c5b4e5b9e276c5b61d891a491a461d891a49e276e5b6e5b9e27",
            "64d99b26932664d93e0f3e0f2c0fc1f0c1f09b2664d99b269b2664d93e0f3e0f",
            "318c318cce73ce736b5a94a57b5a6b5a94a5318c318c318cce73ce736b5a94a5",
            "348dc4f1cb723b0e3b0ecb72390e348dc4f1c4f1348dc4f1cb723b0e3b0ecb72",
            "61d86c5b9e2791a44e5b61d86c5b962791a46e5b61d86c5b9e2791a46e5b61d8",
        ],
    ),
    (
        "noise",
        97,
        61,
        3,
        100,
        [
            "c551523175831214059110d8b3e1ee199b9093fe1f35a5b861dfb5e57f32df25",
            "c3d51ef5235e895a01a7dec953f355202edcfbb3627762450558ef9a204a14f2",
            "9444f89b20d6b8be50c4ba72e6f444b3cec539544b600fb2348e1f4f3a67758f",
            "d680b45e764323b254f6fc6206b6ffaa5b99d119172288af500d4538751fbe78",
            "c551adce7503edeb0591ef27b3a111e69b906c011f355ac741df4a1a7f3220da",
            "9444877420f6474154c4458de6f4bb4ccec5f6bb4b61f2ed348ee8b03a67ce70",
            "83d5e10b231e76e701a3a93753e3aaff2edc864c4277ddfa0558106d204aeb2d",
            "d6804ba1764bdc4f54f6839d06b600757b99aee617327750500dbacf751f4187",
        ],
    ),
    (
        "gradient",
        200,
        150,
        0,
        14,
        [
            "aabaabaaaaaabfb7102e375f6228434d26baec28216fccc02297ecad23b8ecc2",
            "f0556c2ad6ee033df055eb28f5888addf09fd0cafae44174e7a6c0c3c0a1c2d3",
            "ffef0000efab151545289df5353de9a533ef4682743a446a77c2460766ed4668",
            "a5005680a3ba6957a5024180aadf4077a5ca7964afb3e9dfbab36879abfc4879",
            "aaba5555bafe4048127fc8a0622abcf266ba13d7216f333f229713523bb8133d",
            "afefeeffcea8aae0452062083529161823efa975743a999177c0b9b860cd9987",
            "f0550355f6ef1c00f05514d5f78a5522f09f0531fae6948aefe61d2cfca9152c",
            "a500a97fa3aa96a8a500be7fa0cfbf88a5ca849bafb31620aab39786a0fcb786",
        ],
    ),
    (
        "rings",
        640,
        480,
        0,
        100,
        [
            "f3f786a20c20fb9e638e85a18471abdf83d77c0a9c217e0ae78ed4a19c31d6a1",
            "c68777b788186f8920329d8089887277988d7e7f26277c7f1958767719587859",
            "a6a32eaa5975ba2036db2b8bd174a9f5d682fea0497496a037db3e0ac9742e0a",
            "82d2dd1dcd4dc523652737228cddd8d588d8d4d53372d4d54c0ddcdd4c0d52d3",
            "f3d4795f0c204575638e7e5e84217c2083d5a3f51c20c3f5628e6b5e9c217b5f",
            "a680d155597545df36dbd474d164560ad680015f4974695f32dbc1f4c974d1f5",
            "d7af985d995890773172667fd9999d88dd8d8380e627938219589988d9d887a7",
            "93d222e2dd4d3adc7567c8dddcdd272acdd82b2af3722b2a4c0d2322cc8dad08",
        ],
    ),
    (
        "rings",
        129,
        1000,
        0,
        100,
        [
            "b77f40844ba0d680a05efece7ff07fd4b6deaa284f80eaa0fc0eea245d80eaa0",
            "8cdcc8db880c7a75233a6e7d80305edd1120767fa2407cff888832778c887fff",
            "e22aaaae1c75ee2af51b7aac1d65f77ec31b288a1ed5208aed5b4aaa485520aa",
            "d9886260dd48c0df762ac0d7d00074754064d4d5f705d455dddd98ddd9ddd555",
            "b67ffffb4920ab7fa00e29794820a02b944e75df4980155fb80e15ff1c00157f",
            "e22a55511c7511d5f51b85531d650881c11bd5751ed5df55ed5bb55548555555",
            "9cdd773f8fdd978a277f97aab7f5a32277b38f80a2558b808cc8cd8c8c888000",
            "d9889d8edd592f20766e3b28d5a40b884475232af70529aadddd6722d9dd2aaa",
        ],
    ),
    (
        "noise",
        300,
        7,
        4,
        100,
        [
            "c60223d338eddc2d3df808b5f78209946ec746eb9178f66b086df3cac60723d2",
            "92366d296a95c5cb3588652dc297b4da6fc197021c78b2de387cca75c2d78b25",
            "935789796db8768768ada21fa2d7a33e3b92ee41c42d5cc15d3859e093528978",
            "c763c7833fc06f6168ddcf8797c21e703a943da8492d18746d2960df9782618f",
            "c602dc2d38cd23d23df8f74af782f66b6ec7bb1491780994086d0cb5c607dc2d",
            "935776866d98897860ad5de0a2d75cc13b9211bec42da33e5d38a61f93527687",
            "923692d66a953a343d889ad2c2d74b256fc568fd3c784d21387c358ac2d774da",
            "c763387c3fc0909e68dd307897c2e18f3a94c257692de78b6d299f209782de70",
        ],
    ),
];

/// RGB samples, row-major, as the Python side builds them (numpy arrays of uint8).
fn pixels(kind: &str, w: usize, h: usize, seed: u32) -> Vec<[u8; 3]> {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_mul(1664525).wrapping_add(1013904223);
        (state >> 24) as u8
    };
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            out.push(match kind {
                "noise" => [next(), next(), next()],
                "gradient" => [
                    (x * 255 / (w - 1).max(1)) as u8,
                    (y * 255 / (h - 1).max(1)) as u8,
                    ((x + y) * 255 / (w + h - 2).max(1)) as u8,
                ],
                "rings" => {
                    let dx = x as i64 - (w / 3) as i64;
                    let dy = y as i64 - (h / 2) as i64;
                    [
                        ((dx * dx + dy * dy) / 7 % 256) as u8,
                        (x * y % 256) as u8,
                        ((x ^ y) % 256) as u8,
                    ]
                }
                _ => unreachable!("{kind}"),
            });
        }
    }
    out
}

#[test]
fn hashes_equal_the_references() {
    for (kind, w, h, seed, quality, hashes) in GOLDEN {
        let data = pixels(kind, w, h, seed)
            .iter()
            .map(|&[r, g, b]| luminance(r, g, b))
            .collect();
        let mut luma = Luma {
            rows: h,
            cols: w,
            data,
        };
        let (dct, q) = pdq::dct(&mut luma).expect("at least 5 x 5");
        assert_eq!(q, quality, "{kind} {w}x{h}");
        for (which, expected) in DIHEDRAL.iter().zip(hashes) {
            let got = pdq::bits(&pdq::transform(&dct, *which)).to_hex();
            assert_eq!(got, expected, "{kind} {w}x{h} {which:?}");
        }
    }
}
